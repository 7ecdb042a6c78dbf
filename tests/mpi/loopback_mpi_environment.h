// Open MPI's settings for every mpirun a test program starts: root allowed (CI runs as
// root), transports on shared memory and loopback only, so no traffic leaves the machine.
// The program sets them itself, before its first test: ctest's ENVIRONMENT property, passed
// through gtest_discover_tests, keeps only the first entry of a list (CMake 3.25).
// hwloc leaves the PCI bus alone: Open MPI needs only the cores for shared memory and
// loopback, and under AddressSanitizer on a loaded machine hwloc's PCI scan alone took
// MPI_Init past two minutes (against 4 s without it).
#pragma once

#include <cstdlib>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace fabric::testing {

class LoopbackMpiEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    for (const auto& [k, v] :
         std::map<std::string, std::string>{{"HWLOC_COMPONENTS", "-pci"},
                                            {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                                            {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                                            {"OMPI_MCA_btl", "self,vader,tcp"},
                                            {"OMPI_MCA_btl_tcp_if_include", "lo"},
                                            {"OMPI_MCA_oob_tcp_if_include", "lo"},
                                            {"OMPI_MCA_plm", "isolated"},
                                            {"OMPI_MCA_rmaps_base_oversubscribe", "1"}})
      ::setenv(k.c_str(), v.c_str(), 1);
  }
};

} // namespace fabric::testing
