// A build without MPI (-DWITH_MPI=OFF): the mpi backend and mpirun launches answer
// "not built" (exit 4) instead of missing.
#include <unistd.h>

#include "nccltest/mpi_runtime.h"

namespace fabric::nccltest::mpi {
namespace {

Error not_built() {
  return Error(ErrorCode::kNotBuilt, "MPI", "this fabric-nccltest was built without MPI")
      .with_hint("rebuild with -DWITH_MPI=ON (Debian: libopenmpi-dev)");
}

} // namespace

bool built() {
  return false;
}
Result<void> init(int*, char***) {
  return not_built();
}
bool initialized() {
  return false;
}
void finalize() {}
std::string library_version() {
  return "";
}
Result<std::unique_ptr<Group>> world_group() {
  return not_built();
}
Result<std::unique_ptr<Engine>> world_engine() {
  return not_built();
}
[[noreturn]] void abort_world(int exit_code) {
  ::_exit(exit_code);
}

} // namespace fabric::nccltest::mpi
