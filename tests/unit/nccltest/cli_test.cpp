// The built fabric-nccltest's contract without a launcher: usage errors name the option and
// exit 1 (printed by rank 0 only), misstarts are explained, a missing GPU is "no CUDA device".
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include "common/cuda_runtime.h"
#include "common/subprocess.h"
#include "libs/agent_channel/tcp_socket.h"

namespace fabric::nccltest {
namespace {

SubprocessResult run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), FABRIC_NCCLTEST_BINARY);
  env["PATH"] = "/usr/bin:/bin";
  SubprocessOptions options;
  options.environment = env;
  options.timeout = std::chrono::seconds(60);
  auto r = run_subprocess(args, options);
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok() ? *r : SubprocessResult{};
}

TEST(NcclTestCli, HelpListsNcclTestsOptions) {
  SubprocessResult r = run({"--help"});
  EXPECT_EQ(r.exit_status, 0);
  for (const char* option :
       {"-b,--minbytes", "-e,--maxbytes", "-f,--stepfactor", "-n,--iters", "-w,--warmup_iters",
        "-c,--check", "-o,--op", "-d,--datatype", "-r,--root", "-a,--average", "-G,--cudagraph",
        "-T,--timeout", "-J,--output_file", "-z,--blocking", "--pairs", "--prom", "--plot"}) {
    EXPECT_NE(r.stdout_text.find(option), std::string::npos) << option;
  }
}

TEST(NcclTestCli, UsageErrorsNameTheOptionAndExit1) {
  SubprocessResult r = run({"-b", "1G", "-e", "1M"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.stderr_text.find("-b/--minbytes: 1073741824 is above -e/--maxbytes 1048576"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_TRUE(r.stdout_text.empty());
  SubprocessResult half = run({"--backend", "mpi", "-d", "half", "-b", "8", "-e", "8"});
  EXPECT_EQ(half.exit_status, 1);
  EXPECT_NE(half.stderr_text.find("half: the mpi backend has no such type"), std::string::npos)
      << half.stderr_text;
}

// An output that cannot be written is refused before anything runs: the run would only
// find out after its whole sweep.
TEST(NcclTestCli, AnUnwritableOutputIsRefusedBeforeTheRun) {
  for (const char* option : {"-J", "--prom", "--plot"}) {
    SubprocessResult r =
        run({"--backend", "mpi", "-b", "8", "-e", "8", option, "/nonexistent/out"});
    EXPECT_EQ(r.exit_status, 1) << option << ": " << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("/nonexistent/out: no folder /nonexistent/ to write it in"),
              std::string::npos)
        << r.stderr_text;
    EXPECT_EQ(r.stdout_text, "") << "nothing ran";
  }
}

// The build tree holds nccl-tests' program names as links to the binary, as an install does.
TEST(NcclTestCli, NcclTestsProgramNamesAreLinksThatPickTheCollective) {
  const std::string binary = FABRIC_NCCLTEST_BINARY;
  const std::string dir = binary.substr(0, binary.rfind('/') + 1);
  for (std::string name : {"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf",
                           "alltoall_perf", "broadcast_perf", "reduce_perf", "sendrecv_perf"}) {
    const char* other = name == "all_reduce_perf" ? "sendrecv" : "all_reduce";
    auto r = run_subprocess({dir + name, "--collective", other}, {});
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(r->exit_status, 1) << name;
    EXPECT_NE(r->stderr_text.find("contradicts the program's name, " + name), std::string::npos)
        << name << ": " << r->stderr_text;
  }
}

TEST(NcclTestCli, OnlyRankZeroPrintsAnErrorEveryRankHas) {
  SubprocessResult other =
      run({"-n", "0"}, {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_EQ(other.exit_status, 1);
  EXPECT_EQ(other.stderr_text, "");
  SubprocessResult zero =
      run({"-n", "0"}, {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_EQ(zero.exit_status, 1);
  EXPECT_NE(zero.stderr_text.find("-n/--iters: 0 is out of range"), std::string::npos);
}

TEST(NcclTestCli, RendezvousMisstartsAreExplained) {
  SubprocessResult no_addr = run({"-b", "8", "-e", "8"}, {{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(no_addr.exit_status, 1);
  EXPECT_NE(no_addr.stderr_text.find("MASTER_ADDR: is not set"), std::string::npos)
      << no_addr.stderr_text;
  SubprocessResult mpi = run(
      {"--backend", "mpi", "-b", "8", "-e", "8"},
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29999"}});
  EXPECT_EQ(mpi.exit_status, 1);
  EXPECT_NE(mpi.stderr_text.find("the mpi backend needs mpirun, but this rank was started without "
                                 "it (RANK=0 WORLD_SIZE=2)"),
            std::string::npos)
      << mpi.stderr_text;
  SubprocessResult bad_fault =
      run({"-b", "8", "-e", "8"}, {{"FABRIC_NCCLTEST_FAULT", "explode=1"}});
  EXPECT_EQ(bad_fault.exit_status, 1);
  EXPECT_NE(bad_fault.stderr_text.find("FABRIC_NCCLTEST_FAULT"), std::string::npos);
}

// Two binaries meet through the rendezvous (a fork each, so that both run at once), then
// both stop at the first thing the rendezvous cannot give them here: a GPU.
TEST(NcclTestCli, TwoRanksMeetWithoutMpiThenSayNoCudaDevice) {
  // With GPUs the ranks would go on to run (two) or stop at a device count (one): the gpu
  // tier covers those.
  if (auto gpus = cuda::device_count(); gpus.ok())
    GTEST_SKIP() << "this host has " << *gpus << " CUDA device(s)";
  auto listener = probes::listen_tcp("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  const std::string port = std::to_string(*probes::bound_port(listener->get()));
  listener->reset();
  std::vector<pid_t> pids;
  for (const char* rank : {"1", "0"}) {
    pid_t pid = ::fork();
    if (pid == 0) {
      SubprocessResult r =
          run({"--backend", "nccl", "-b", "8", "-e", "8", "--rendezvous-timeout", "30"},
              {{"RANK", rank},
               {"WORLD_SIZE", "2"},
               {"MASTER_ADDR", "127.0.0.1"},
               {"MASTER_PORT", port}});
      const bool met_and_refused = r.stderr_text.find("no CUDA device") != std::string::npos &&
                                   r.stderr_text.find("did not join") == std::string::npos;
      ::_exit(r.exit_status == 4 && met_and_refused ? 0 : 10 + r.exit_status);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "a rank did not meet the other, or did not stop at the GPU";
  }
}

TEST(NcclTestCli, TheNcclBackendWithoutAGpuSaysNoCudaDevice) {
  if (auto gpus = cuda::device_count(); gpus.ok())
    GTEST_SKIP() << "this host has " << *gpus << " CUDA device(s)";
  SubprocessResult r = run({"--backend", "nccl", "-b", "8", "-e", "8"});
  EXPECT_EQ(r.exit_status, 4) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("no CUDA device"), std::string::npos) << r.stderr_text;
}

} // namespace
} // namespace fabric::nccltest
