// How the nccl backend sets up its communicators and buffers, as nccl-tests does (-g, -t,
// -R): the communicators of one process created in one NCCL group, and buffer registration
// chosen from the entry points the NCCL at run time has. Only the nccl backend's files
// include this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "nccltest/nccl_api.h"

namespace fabric::nccltest::nccl {

// -R as nccl-tests names it: 0 none, 1 ncclCommRegister, 2 symmetric windows.
enum class Registration { kNone = 0, kLocal = 1, kSymmetric = 2 };

struct EngineConfig {
  Registration registration = Registration::kNone;
  bool stream_null = false; // -y 1: every operation on CUDA's legacy default stream
  // -x: ncclConfig_t's CTAPolicy (NCCL 2.27; 2 needs 2.28), -1 leaves NCCL's default.
  int cta_policy = -1;
  // ncclConfig_t's nvlinkCentricSched, which nccl-tests built against NCCL 2.28 sets on
  // every communicator it makes (NCCL 2.28 and later read it).
  bool nvlink_centric_sched = false;
};

// -x as nccl-tests applies it to the NCCL at run time, and nvlinkCentricSched where it has
// it: the policy needs NCCL 2.27, policy 2 (zero) NCCL 2.28; what it cannot take is ignored
// with nccl-tests' line in `note`.
struct CommConfigPlan {
  int cta_policy = -1;
  bool nvlink_centric_sched = false;
  std::string note;
};
CommConfigPlan plan_comm_config(int requested_cta_policy, int library_version);

// The ncclConfig_t every communicator of the run is made with (created and split alike).
ncclConfig_t comm_config(const EngineConfig& config);

// Each device's free memory (cudaMemGetInfo), in order: -M's figures are differences of
// these, as nccl-tests takes them.
Result<std::vector<std::int64_t>> free_memory(const Api& api, const std::vector<int>& devices);

// What -R does on this NCCL: symmetric windows need ncclCommWindowRegister (NCCL 2.27), else
// local registration, as nccl-tests falls back; local registration needs ncclCommRegister
// (NCCL 2.19), else none. `note` says what was given up, in nccl-tests' words, or "".
struct RegistrationPlan {
  Registration mode = Registration::kNone;
  std::string note;
};
RegistrationPlan plan_registration(const Api& api, Registration requested, int library_version);

// How the engine's buffers are allocated and registered, for a header line.
std::string buffer_note(const Api& api, Registration mode);

// One communicator per device, ranks first_rank.. in device order, created in one NCCL
// group as nccl-tests does (ncclGroupStart, cudaSetDevice + ncclCommInitRankConfig per
// device, ncclGroupEnd): a process driving several GPUs must not wait for one rank's
// initialisation before starting the next.
Result<std::vector<ncclComm_t>> init_comms(const Api& api, const ncclUniqueId& id, int nranks,
                                           int first_rank, const std::vector<int>& devices,
                                           const EngineConfig& config = {});

} // namespace fabric::nccltest::nccl
