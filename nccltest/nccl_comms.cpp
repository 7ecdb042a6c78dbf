// Setting up the nccl backend's communicators and buffers as nccl-tests does: one
// communicator per GPU of the process created in one NCCL group, and -R's registration
// chosen from what the NCCL at run time has.
#include "nccltest/nccl_comms.h"

namespace fabric::nccltest::nccl {
namespace {

constexpr int kNcclWindowsVersion = 22700;       // ncclCommWindowRegister, NCCL 2.27
constexpr int kNcclCtaPolicyVersion = 22700;     // ncclConfig_t's CTAPolicy, NCCL 2.27
constexpr int kNcclCtaPolicyZeroVersion = 22800; // NCCL_CTA_POLICY_ZERO and nvlinkCentricSched

} // namespace

RegistrationPlan plan_registration(const Api& a, Registration requested, int library_version) {
  RegistrationPlan plan;
  plan.mode = requested;
  const bool windows = a.comm_window_register != nullptr && a.comm_window_deregister != nullptr &&
                       library_version >= kNcclWindowsVersion;
  const bool local = a.comm_register != nullptr && a.comm_deregister != nullptr;
  if (plan.mode == Registration::kSymmetric && !windows) {
    plan.mode = Registration::kLocal;
    plan.note = "Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting to local "
                "registration";
  }
  if (plan.mode == Registration::kLocal && !local) {
    plan.mode = Registration::kNone;
    plan.note = "Option -R (register) is not supported before NCCL 2.19. Ignoring";
  }
  return plan;
}

std::string buffer_note(const Api& a, Registration mode) {
  std::string note = a.mem_alloc != nullptr && a.mem_free != nullptr
                         ? "buffers from ncclMemAlloc"
                         : "buffers from cudaMalloc (this NCCL has no ncclMemAlloc)";
  if (mode == Registration::kLocal) note += ", registered with ncclCommRegister (-R 1)";
  if (mode == Registration::kSymmetric)
    note += ", registered as symmetric windows with ncclCommWindowRegister (-R 2)";
  return note;
}

CommConfigPlan plan_comm_config(int requested_cta_policy, int library_version) {
  CommConfigPlan plan;
  plan.nvlink_centric_sched = library_version >= kNcclCtaPolicyZeroVersion;
  if (requested_cta_policy < 0) return plan;
  if (library_version < kNcclCtaPolicyVersion) {
    plan.note = "Option -x (cta_policy) is not supported before NCCL 2.27. Ignoring";
  } else if (requested_cta_policy > 1 && library_version < kNcclCtaPolicyZeroVersion) {
    plan.note = "Option -x (cta_policy) " + std::to_string(requested_cta_policy) +
                " is not supported before NCCL 2.28. Ignoring";
  } else {
    plan.cta_policy = requested_cta_policy;
  }
  return plan;
}

ncclConfig_t comm_config(const EngineConfig& config) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  if (config.cta_policy >= 0) c.CTAPolicy = config.cta_policy;
  if (config.nvlink_centric_sched) c.nvlinkCentricSched = 1;
  return c;
}

Result<std::vector<std::int64_t>> free_memory(const Api& a, const std::vector<int>& devices) {
  std::vector<std::int64_t> out;
  for (int device : devices) {
    FABRIC_TRY(check(a, a.set_device(device), "cudaSetDevice"));
    std::size_t free_bytes = 0, total = 0;
    FABRIC_TRY(check(a, a.mem_get_info(&free_bytes, &total), "cudaMemGetInfo"));
    out.push_back(static_cast<std::int64_t>(free_bytes));
  }
  return out;
}

Result<std::vector<ncclComm_t>> init_comms(const Api& a, const ncclUniqueId& id, int nranks,
                                           int first_rank, const std::vector<int>& devices,
                                           const EngineConfig& engine_config) {
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  FABRIC_TRY(check(a, a.group_start(), "ncclGroupStart"));
  Result<void> made = Ok();
  for (std::size_t i = 0; i < devices.size() && made.ok(); ++i) {
    made = check(a, a.set_device(devices[i]), "cudaSetDevice");
    if (!made.ok()) break;
    ncclConfig_t config = comm_config(engine_config);
    made = check(
        a,
        a.comm_init_rank_config(&comms[i], nranks, id, first_rank + static_cast<int>(i), &config),
        "ncclCommInitRankConfig");
  }
  Result<void> ended = check(a, a.group_end(), "ncclGroupEnd");
  if (made.ok()) made = ended;
  if (!made.ok()) {
    for (ncclComm_t c : comms)
      if (c != nullptr) a.comm_abort(c);
    return std::move(made).error();
  }
  return comms;
}

} // namespace fabric::nccltest::nccl
