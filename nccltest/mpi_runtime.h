// MPI, behind functions that do not expose mpi.h: the process-wide runtime (initialised
// once when mpirun started us, or when a single process runs the mpi backend), a Group
// over MPI_COMM_WORLD for the control plane, and the mpi engine over its own duplicate of
// MPI_COMM_WORLD. In a build without MPI every function answers kNotBuilt.
#pragma once

#include <memory>

#include "common/result.h"
#include "nccltest/engine.h"
#include "nccltest/group.h"

namespace fabric::nccltest::mpi {

bool built();
// MPI_Init, as nccl-tests calls it (only the main thread calls MPI; the watchdog's and the
// control channel's threads never do) and MPI_ERRORS_RETURN on the communicators we create.
Result<void> init(int* argc, char*** argv);
bool initialized();
// MPI_Finalize, when init() succeeded.
void finalize();
// MPI_Get_library_version's first line.
std::string library_version();

Result<std::unique_ptr<Group>> world_group();
Result<std::unique_ptr<Engine>> world_engine();

// MPI_Abort on MPI_COMM_WORLD: every rank of the job ends, mpirun exits with `exit_code`.
[[noreturn]] void abort_world(int exit_code);

} // namespace fabric::nccltest::mpi
