// The nccl engine over a communicator that already exists (from ncclCommInitRankConfig or
// ncclCommSplit); only the nccl backend's files include this.
#pragma once

#include <memory>

#include "nccltest/engine.h"
#include "nccltest/nccl_api.h"

namespace fabric::nccltest::nccl {

// Takes ownership of `comm` (destroyed with the engine, or aborted).
Result<std::unique_ptr<Engine>> make_nccl_engine(const Api& api, ncclComm_t comm, int device);

} // namespace fabric::nccltest::nccl
