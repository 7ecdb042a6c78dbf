// Which GPU a rank drives, exactly as nccl-tests chooses it (src/common.cu, one thread and
// one GPU per process): NCCL_TESTS_DEVICE when set, the same device index for every rank
// of a node; otherwise the rank's local rank (its index among the ranks on its node).
//
// So a node that shows each rank a single GPU of its own (Slurm --gpus-per-task,
// per-rank CUDA_VISIBLE_DEVICES, Kubernetes pods on the host network that share a host
// name) runs with NCCL_TESTS_DEVICE=0; without it, local rank 1 asks for device 1 and is
// refused here with that advice, where nccl-tests would fail in cudaSetDevice.
#pragma once

#include <string>

#include "common/result.h"

namespace fabric::nccltest {

// `nccl_tests_device`: NCCL_TESTS_DEVICE's value, or nullptr. Errors name the rank and the
// devices visible.
Result<int> device_for_rank(int local_rank, int device_count, const char* nccl_tests_device);

} // namespace fabric::nccltest
