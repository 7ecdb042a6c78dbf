// How this process was started, read from its environment before anything else happens:
// by mpirun (Open MPI, or a PMIx/PMI launcher), by a torchrun-style launcher or a
// Kubernetes Indexed Job (RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT, with
// JOB_COMPLETION_INDEX as the rank when RANK is absent), or alone.
//
// Misstarts are errors here rather than n copies each running alone: a build without MPI
// started by mpirun, a rendezvous with a variable missing or malformed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace fabric::nccltest {

enum class LaunchKind { kSingle, kMpirun, kRendezvous };

struct Launch {
  LaunchKind kind = LaunchKind::kSingle;
  int rank = 0;       // as the environment says; under mpirun, MPI_Comm_rank is the truth
  int world_size = 1; // idem
  std::optional<int> local_rank; // LOCAL_RANK / OMPI_COMM_WORLD_LOCAL_RANK
  std::string master_addr;       // rendezvous only
  uint16_t master_port = 0;      // rendezvous only
  std::string token_file;        // rendezvous only: FABRIC_NCCLTEST_TOKEN_FILE, "" when unset
  std::string evidence;          // "OMPI_COMM_WORLD_SIZE=4", "RANK=1 WORLD_SIZE=4"
  std::vector<std::string> warnings;
};

std::string_view launch_kind_name(LaunchKind kind); // "mpirun", "rendezvous", "single process"

using GetEnv = std::function<const char*(const char*)>;

// `built_with_mpi`: whether this binary can join an mpirun job. Errors are usage errors
// (kInvalidEnvironment, exit 1) naming the variable, or kNotBuilt (exit 4) for mpirun
// without MPI.
Result<Launch> detect_launch(const GetEnv& getenv, bool built_with_mpi);

// The rank the environment gives this process, read without validating anything: decides
// who prints an error that every rank hits (rank 0 only). 0 when nothing says.
int rank_hint(const GetEnv& getenv);

// std::getenv, for callers outside tests.
GetEnv process_env();

} // namespace fabric::nccltest
