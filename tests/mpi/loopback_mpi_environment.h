// Open MPI's settings for every mpirun a test program starts: root allowed (CI runs as
// root), transports on shared memory and loopback only, so no traffic leaves the machine.
// The program sets them itself, before its first test: ctest's ENVIRONMENT property, passed
// through gtest_discover_tests, keeps only the first entry of a list (CMake 3.25).
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
         std::map<std::string, std::string>{{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
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
