// gpu tier: the programs a test runs. Where the build put them, unless the environment names
// them under the same name as the compile-time path: scripts/gpu_check.sh runs these tests
// from its folder on a GPU node, where the build tree does not exist, and exports where its
// copies are (FABRIC_PROBE_BINARY, FABRIC_NCCLTEST_BINARY, FABRIC_NCCL_PROFILER_PLUGIN,
// FABRIC_MPIEXEC).
#pragma once

#include <cstdlib>
#include <string>

namespace fabric::testing {

inline std::string program_path(const char* variable, const char* built) {
  const char* named = std::getenv(variable);
  return named != nullptr && *named != '\0' ? named : built;
}

} // namespace fabric::testing

// FABRIC_GPU_PROGRAM(FABRIC_PROBE_BINARY): $FABRIC_PROBE_BINARY, else the built path.
#define FABRIC_GPU_PROGRAM(NAME) ::fabric::testing::program_path(#NAME, NAME)
