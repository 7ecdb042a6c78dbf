// gpu tier: the nccl backend on every visible GPU (one rank per GPU under mpirun), every
// collective and type checked against the same expected values as the mpi backend's.
// Skips, saying why, where there is no CUDA device or no NCCL.
#include <gtest/gtest.h>

#include "common/subprocess.h"
#include "nccltest/nccl_backend.h"
#include "tests/gpu/program_path.h"
#include "tests/mpi/loopback_mpi_environment.h"
#include "tests/unit/nccltest/nccl_tests_parsers.h"

namespace fabric::nccltest {
namespace {

const auto* const kLoopbackMpi =
    ::testing::AddGlobalTestEnvironment(new fabric::testing::LoopbackMpiEnvironment);

class NcclOnEveryGpu : public ::testing::TestWithParam<const char*> {
protected:
  void SetUp() override {
    nccl::Availability gpu = nccl::probe();
    if (!gpu.usable) GTEST_SKIP() << "the nccl backend cannot run here: " << gpu.reason;
    devices_ = gpu.device_count;
  }
  int devices_ = 0;
};

TEST_P(NcclOnEveryGpu, EveryTypeAndOpChecksClean) {
  std::vector<std::string> argv = {FABRIC_GPU_PROGRAM(FABRIC_MPIEXEC),
                                   "-np",
                                   std::to_string(devices_),
                                   "--oversubscribe",
                                   FABRIC_GPU_PROGRAM(FABRIC_NCCLTEST_BINARY),
                                   "--backend",
                                   "nccl",
                                   "--collective",
                                   GetParam(),
                                   "-d",
                                   "all",
                                   "-o",
                                   "all",
                                   "-b",
                                   "8",
                                   "-e",
                                   "32M",
                                   "-f",
                                   "8",
                                   "-n",
                                   "5",
                                   "-c",
                                   "2",
                                   "-T",
                                   "120"};
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(600);
  auto r = run_subprocess(argv, options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->exit_status, 0) << r->stdout_text << r->stderr_text;
  testing::ParsedRun parsed = testing::parse_fixed_13(r->stdout_text);
  EXPECT_FALSE(parsed.rows.empty());
  EXPECT_EQ(parsed.out_of_bounds, 0);
  EXPECT_NE(r->stdout_text.find("# fabric-nccltest: backend nccl, "), std::string::npos);
  EXPECT_NE(r->stdout_text.find("# Transport: "), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(NcclTestGpu, NcclOnEveryGpu,
                         ::testing::Values("all_reduce", "all_gather", "reduce_scatter",
                                           "broadcast", "reduce", "alltoall", "sendrecv"));

} // namespace
} // namespace fabric::nccltest
