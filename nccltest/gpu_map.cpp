#include "nccltest/gpu_map.h"

#include <charconv>
#include <cstring>

namespace fabric::nccltest {

Result<int> device_for_rank(int local_rank, int local_ranks, int device_count,
                            const char* nccl_tests_device) {
  if (device_count <= 0) {
    return Error(ErrorCode::kUnsupported, "choosing a GPU", "no CUDA device");
  }
  int first = 0;
  if (nccl_tests_device != nullptr && *nccl_tests_device != '\0') {
    auto [end, ec] = std::from_chars(nccl_tests_device,
                                     nccl_tests_device + std::strlen(nccl_tests_device), first);
    if (ec != std::errc() || *end != '\0' || first < 0) {
      return Error(ErrorCode::kInvalidEnvironment, "NCCL_TESTS_DEVICE",
                   std::string("'") + nccl_tests_device + "' is not a device index");
    }
  }
  // One visible GPU shared by several ranks of a node is a misstart, not a mapping.
  if (device_count == 1 && first == 0 && local_ranks > 1) {
    return Error(ErrorCode::kInvalidConfig, "choosing a GPU",
                 std::to_string(local_ranks) + " ranks on this node but 1 CUDA device visible")
        .with_hint("start one rank per GPU, or give each rank its own GPU (CUDA_VISIBLE_DEVICES)");
  }
  int device = first + local_rank;
  if (device_count == 1 && first == 0) device = 0;
  if (device >= device_count) {
    return Error(ErrorCode::kInvalidConfig, "choosing a GPU",
                 "local rank " + std::to_string(local_rank) + " needs device " +
                     std::to_string(device) + " but only " + std::to_string(device_count) +
                     " CUDA devices are visible")
        .with_hint("start at most one rank per visible GPU on each node");
  }
  return device;
}

} // namespace fabric::nccltest
