#include "nccltest/nccl_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/cuda_runtime.h"
#include "nccltest/engine_nccl.h"
#include "nccltest/engine_threads.h"
#include "nccltest/memory_report.h"
#include "nccltest/nccl_api.h"

namespace fabric::nccltest::nccl {
namespace {

int g_library_version = 0;

} // namespace

bool built() {
  return true;
}

int headers_version() {
  return NCCL_VERSION_CODE;
}

Availability probe() {
  Availability out;
  auto count = cuda::device_count();
  if (!count.ok()) {
    out.driver_gpus = cuda::driver_device_count();
    const std::string& detail = count.error().detail();
    if (detail.rfind("no CUDA device", 0) == 0) {
      out.reason = detail;
    } else if (out.driver_gpus > 0) {
      out.reason = std::to_string(out.driver_gpus) + " GPU(s) on this node, but " + detail;
    } else {
      out.reason = "no CUDA device (" + detail + ")";
    }
    return out;
  }
  out.driver_gpus = *count;
  auto loaded = api();
  if (!loaded.ok()) {
    out.reason = std::to_string(*count) + " CUDA device(s) visible, but " + loaded.error().detail();
    return out;
  }
  out.usable = true;
  out.device_count = *count;
  out.reason = std::to_string(*count) + " CUDA device" + (*count == 1 ? "" : "s") + " visible";
  return out;
}

Result<DeviceFacts> describe_device(int device) {
  FABRIC_ASSIGN_OR_RETURN(const Api* a, api());
  FABRIC_TRY(check(*a, a->set_device(device), "cudaSetDevice"));
  DeviceFacts facts;
  // cudaDeviceProp's size changes between CUDA versions; its name is always first.
  std::vector<std::byte> props(16384);
  FABRIC_TRY(check(*a, a->get_device_properties(props.data(), device), "cudaGetDeviceProperties"));
  const char* name = reinterpret_cast<const char*>(props.data());
  facts.name = std::string(name, strnlen(name, 256));
  char bus[32] = {};
  FABRIC_TRY(check(*a, a->device_get_pci_bus_id(bus, sizeof bus, device), "cudaDeviceGetPCIBusId"));
  facts.pci_bus_id = std::string(bus).substr(0, 12); // "0000:07:00" as nccl-tests prints it
  std::size_t free_bytes = 0, total = 0;
  FABRIC_TRY(check(*a, a->mem_get_info(&free_bytes, &total), "cudaMemGetInfo"));
  facts.free_memory = free_bytes;
  int major = 0, minor = 0;
  FABRIC_TRY(check(*a, a->device_get_attribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                   "cudaDeviceGetAttribute"));
  FABRIC_TRY(check(*a, a->device_get_attribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
                   "cudaDeviceGetAttribute"));
  facts.compute_capability = major * 10 + minor;
  return facts;
}

Result<std::unique_ptr<Engine>> make_engine(Group& group, EngineSetup& setup) {
  FABRIC_ASSIGN_OR_RETURN(const Api* a, api());
  if (a->get_version(&g_library_version) != ncclSuccess) g_library_version = 0;
  FABRIC_TRY(check(*a, a->set_device(setup.devices.front()), "cudaSetDevice"));
  ncclUniqueId id{};
  std::string mine;
  if (group.rank() == 0) {
    FABRIC_TRY(check(*a, a->get_unique_id(&id), "ncclGetUniqueId"));
    mine.assign(id.internal, sizeof id.internal);
  }
  FABRIC_ASSIGN_OR_RETURN(std::string shared, group.broadcast(mine));
  if (shared.size() != sizeof id.internal) {
    return Error(ErrorCode::kDecode, "receiving the NCCL id",
                 std::to_string(shared.size()) + " bytes instead of " +
                     std::to_string(sizeof id.internal));
  }
  std::memcpy(id.internal, shared.data(), sizeof id.internal);
  const int local = static_cast<int>(setup.devices.size());
  const CommConfigPlan comm_plan = plan_comm_config(setup.cta_policy, g_library_version);
  if (!comm_plan.note.empty()) setup.notes.push_back(comm_plan.note);
  EngineConfig config;
  config.cta_policy = comm_plan.cta_policy;
  config.nvlink_centric_sched = comm_plan.nvlink_centric_sched;
  config.stream_null = setup.stream_null;
  std::vector<std::int64_t> free_before;
  if (setup.memory_report) {
    FABRIC_ASSIGN_OR_RETURN(free_before, free_memory(*a, setup.devices));
  }
  FABRIC_ASSIGN_OR_RETURN(
      std::vector<ncclComm_t> comms,
      init_comms(*a, id, group.size() * local, group.rank() * local, setup.devices, config));
  if (setup.memory_report) {
    FABRIC_ASSIGN_OR_RETURN(std::vector<std::int64_t> free_after, free_memory(*a, setup.devices));
    setup.init_memory = largest_drop(free_before, free_after);
  }
  const RegistrationPlan registration =
      plan_registration(*a, static_cast<Registration>(setup.registration), g_library_version);
  if (!registration.note.empty()) setup.notes.push_back(registration.note);
  setup.notes.push_back(buffer_note(*a, registration.mode));
  if (config.cta_policy >= 0) {
    setup.notes.push_back("communicators made with CTAPolicy " + std::to_string(config.cta_policy) +
                          " (-x)");
  }
  if (setup.stream_null) {
    setup.notes.push_back("operations on CUDA's legacy default stream (-y 1), as nccl-tests' "
                          "stream_null");
  }
  config.registration = registration.mode;
  // As nccl-tests without -p: the process's communicators are made here in one group, then
  // each thread takes its GPUs' (-g of them) and owns them from then on.
  const std::size_t threads = static_cast<std::size_t>(std::max(setup.threads, 1));
  const std::size_t per_thread = comms.size() / threads;
  std::vector<std::vector<Member>> slices(threads);
  for (std::size_t i = 0; i < comms.size(); ++i)
    slices[i / per_thread].push_back(Member{comms[i], setup.devices[i]});
  if (threads == 1) return make_nccl_engine(*a, std::move(slices.front()), config);
  std::vector<EngineMaker> makers;
  for (std::vector<Member>& slice : slices) {
    makers.push_back(
        [a, slice = std::move(slice), config] { return make_nccl_engine(*a, slice, config); });
  }
  return make_threaded_engine(std::move(makers));
}

int library_version() {
  return g_library_version;
}

Result<void> pairs_supported() {
  FABRIC_ASSIGN_OR_RETURN(const Api* a, api());
  int version = 0;
  if (a->get_version(&version) != ncclSuccess) version = 0;
  return check_split(*a, version);
}

} // namespace fabric::nccltest::nccl
