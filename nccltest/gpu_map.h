// Which GPUs a process drives, exactly as nccl-tests chooses them (src/common.cu): a process
// with -g G and -t T drives G x T consecutive devices starting at NCCL_TESTS_DEVICE when
// set (the same first device for every process of a node), otherwise at its local rank
// (its index among the processes on its node) times G x T. One GPU per process is the case
// of device_for_rank.
//
// So a node that shows each rank a single GPU of its own (Slurm --gpus-per-task,
// per-rank CUDA_VISIBLE_DEVICES, Kubernetes pods on the host network that share a host
// name) runs with NCCL_TESTS_DEVICE=0; without it, local rank 1 asks for device 1 and is
// refused here with that advice, where nccl-tests would fail in cudaSetDevice.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace fabric::nccltest {

// `nccl_tests_device`: NCCL_TESTS_DEVICE's value, or nullptr. Errors name the rank and the
// devices visible.
Result<int> device_for_rank(int local_rank, int device_count, const char* nccl_tests_device);

// The `per_process` devices of the process with this local rank, in rank order.
Result<std::vector<int>> devices_for_process(int local_rank, int per_process, int device_count,
                                             const char* nccl_tests_device);

} // namespace fabric::nccltest
