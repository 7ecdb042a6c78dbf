// The nccl engine over communicators that already exist (from ncclCommInitRankConfig or
// ncclCommSplit): one per GPU this process drives (nccl-tests' -g and -t); only the nccl
// backend's files include this.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nccltest/engine.h"
#include "nccltest/nccl_api.h"
#include "nccltest/nccl_comms.h"

namespace fabric::nccltest::nccl {

struct Member {
  ncclComm_t comm = nullptr;
  int device = 0;
};

// Takes ownership of every member's communicator (destroyed with the engine, or aborted).
// The engine's rank() is the first member's, local_ranks() their number; each operation is
// launched on every member, in one NCCL group when there are several.
Result<std::unique_ptr<Engine>> make_nccl_engine(const Api& api, std::vector<Member> members,
                                                 const EngineConfig& config = {});
Result<std::unique_ptr<Engine>> make_nccl_engine(const Api& api, ncclComm_t comm, int device);

} // namespace fabric::nccltest::nccl
