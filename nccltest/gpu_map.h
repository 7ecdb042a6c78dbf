// Which GPU a rank drives: its local rank (its index among the ranks on its node), as
// nccl-tests maps them, offset by NCCL_TESTS_DEVICE when set. A node that shows each rank
// a single GPU (Kubernetes: one GPU per pod, CUDA_VISIBLE_DEVICES per rank) maps every
// rank to device 0.
#pragma once

#include <string>

#include "common/result.h"

namespace fabric::nccltest {

// `nccl_tests_device`: NCCL_TESTS_DEVICE's value, or nullptr. Errors name the rank and the
// devices visible.
Result<int> device_for_rank(int local_rank, int local_ranks, int device_count,
                            const char* nccl_tests_device);

} // namespace fabric::nccltest
