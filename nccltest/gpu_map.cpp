#include "nccltest/gpu_map.h"

#include <charconv>
#include <cstring>

namespace fabric::nccltest {

Result<int> device_for_rank(int local_rank, int device_count, const char* nccl_tests_device) {
  FABRIC_ASSIGN_OR_RETURN(std::vector<int> devices,
                          devices_for_process(local_rank, 1, device_count, nccl_tests_device));
  return devices.front();
}

Result<std::vector<int>> devices_for_process(int local_rank, int per_process, int device_count,
                                             const char* nccl_tests_device) {
  if (device_count <= 0) {
    return Error(ErrorCode::kUnsupported, "choosing a GPU", "no CUDA device");
  }
  const bool named = nccl_tests_device != nullptr && *nccl_tests_device != '\0';
  int device = local_rank * per_process;
  if (named) {
    auto [end, ec] = std::from_chars(nccl_tests_device,
                                     nccl_tests_device + std::strlen(nccl_tests_device), device);
    if (ec != std::errc() || *end != '\0' || device < 0) {
      return Error(ErrorCode::kInvalidEnvironment, "NCCL_TESTS_DEVICE",
                   std::string("'") + nccl_tests_device + "' is not a device index");
    }
  }
  const int last = device + per_process - 1;
  if (last < device_count) {
    std::vector<int> devices;
    for (int d = device; d <= last; ++d)
      devices.push_back(d);
    return devices;
  }
  const std::string visible = std::to_string(device_count) + " CUDA device" +
                              (device_count == 1 ? " is" : "s are") + " visible";
  if (named) {
    return Error(ErrorCode::kInvalidConfig, "NCCL_TESTS_DEVICE",
                 "names device " + std::to_string(device) +
                     (per_process > 1 ? " as the first of " + std::to_string(per_process) : "") +
                     " but only " + visible)
        .with_hint("NCCL_TESTS_DEVICE is the device every rank of a node uses, counted "
                   "among the devices that rank sees (after CUDA_VISIBLE_DEVICES)");
  }
  if (per_process > 1) {
    return Error(ErrorCode::kInvalidConfig, "-g/-t",
                 "local process " + std::to_string(local_rank) + " drives devices " +
                     std::to_string(device) + " to " + std::to_string(last) +
                     " (-g x -t = " + std::to_string(per_process) + " per process, as " +
                     "nccl-tests counts them) but only " + visible)
        .with_hint("start fewer processes per node, or lower -g or -t");
  }
  Error e(ErrorCode::kInvalidConfig, "choosing a GPU",
          "local rank " + std::to_string(local_rank) + " uses device " + std::to_string(device) +
              " (as nccl-tests does) but only " + visible);
  if (device_count == 1) {
    return e.with_hint("when each rank sees its own GPU (CUDA_VISIBLE_DEVICES per rank), set "
                       "NCCL_TESTS_DEVICE=0, as for nccl-tests");
  }
  return e.with_hint("start at most one rank per visible GPU on each node");
}

} // namespace fabric::nccltest
