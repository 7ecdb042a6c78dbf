// mpi tier: the built fabric-nccltest under a real mpirun, 4 ranks on loopback (the
// transports pinned to shared memory and lo by the test's environment, see CMakeLists).
// Every collective and type runs and checks clean; a corrupted rank is named; the watchdog
// names a stalled rank and ends the run in bounded time; --pairs names a slow pair.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "common/json.h"
#include "common/subprocess.h"
#include "tests/mpi/loopback_mpi_environment.h"
#include "tests/unit/nccltest/nccl_tests_parsers.h"

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;

struct MpiRun {
  int status = -1;
  std::string out, err;
  double seconds = 0;
};

const auto* const kLoopbackMpi =
    ::testing::AddGlobalTestEnvironment(new fabric::testing::LoopbackMpiEnvironment);

MpiRun mpirun(int ranks, std::vector<std::string> args,
              std::map<std::string, std::string> extra = {}, std::chrono::seconds timeout = 120s) {
  std::vector<std::string> argv = {FABRIC_MPIEXEC, "-np", std::to_string(ranks), "--oversubscribe"};
  for (const auto& [k, v] : extra) {
    ::setenv(k.c_str(), v.c_str(), 1);
    argv.insert(argv.end(), {"-x", k});
  }
  argv.push_back(FABRIC_NCCLTEST_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  SubprocessOptions options;
  options.timeout = timeout;
  auto start = std::chrono::steady_clock::now();
  auto r = run_subprocess(argv, options);
  MpiRun out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& [k, v] : extra)
    ::unsetenv(k.c_str());
  EXPECT_TRUE(r.ok()) << r.error().message();
  if (!r.ok()) return out;
  out.status = r->exit_status;
  out.out = r->stdout_text;
  out.err = r->stderr_text;
  return out;
}

std::string temp_path(const std::string& name) {
  return "/tmp/fabric-nccltest-mpi-" + std::to_string(::getpid()) + "-" + name;
}

class EveryCollective : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryCollective, EveryTypeAndOpChecksClean) {
  MpiRun r = mpirun(4, {"--collective", GetParam(), "-d", "all", "-o", "all", "-b", "8", "-e",
                        "256K", "-f", "32", "-n", "3", "-w", "1", "-c", "2"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  testing::ParsedRun parsed = testing::parse_fixed_13(r.out);
  // 8 types x (4 ops where the collective takes one) x 4 sizes.
  const std::string c = GetParam();
  const bool ops = c == "all_reduce" || c == "reduce_scatter" || c == "reduce" || c == "sendrecv";
  EXPECT_EQ(parsed.rows.size(), 8u * (ops ? 4u : 1u) * 4u) << r.out;
  for (const auto& row : parsed.rows) {
    EXPECT_EQ(row.oop_wrong, "0") << row.size << " " << row.type << " " << row.redop;
    if (c == "alltoall" || c == "sendrecv") {
      EXPECT_EQ(row.ip_wrong, "N/A");
    } else {
      EXPECT_EQ(row.ip_wrong, "0");
    }
  }
  EXPECT_EQ(parsed.out_of_bounds, 0);
  EXPECT_EQ(parsed.out_of_bounds_verdict, "OK");
  EXPECT_NE(r.out.find("# Collective test starting: " + c + "_perf"), std::string::npos);
  EXPECT_NE(r.out.find("4 ranks on 1 node, launched by mpirun;"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(NcclTestMpi, EveryCollective,
                         ::testing::Values("all_reduce", "all_gather", "reduce_scatter",
                                           "broadcast", "reduce", "alltoall", "sendrecv"));

TEST(NcclTestMpi, HeaderNamesTheBackendAndEveryRank) {
  MpiRun r = mpirun(4, {"-b", "1K", "-e", "4K", "-f", "2", "-n", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("# fabric-nccltest: backend mpi, "), std::string::npos) << r.out;
  for (int rank = 0; rank < 4; ++rank) {
    // Room for any int: GCC's -Wformat-truncation sizes %2d for INT_MIN.
    char prefix[48];
    std::snprintf(prefix, sizeof prefix, "#  Rank %2d Group  0 Pid ", rank);
    EXPECT_NE(r.out.find(prefix), std::string::npos) << prefix;
  }
  EXPECT_TRUE(testing::parse_header_driven(r.out).has_value());
  EXPECT_EQ(testing::parse_regex(r.out).rows.size(), 3u);
}

TEST(NcclTestMpi, ACorruptedRankIsReportedWithItsRank) {
  const std::string json = temp_path("corrupt.json");
  MpiRun r = mpirun(4, {"-b", "4K", "-e", "16K", "-f", "4", "-n", "2", "-J", json},
                    {{"FABRIC_NCCLTEST_FAULT", "corrupt=2"}});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("TEST-ONLY FAULT INJECTION IN FORCE"), std::string::npos);
  EXPECT_NE(r.out.find("#  ! rank 2 ("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("#  ! rank 1 ("), std::string::npos);
  testing::ParsedRun parsed = testing::parse_fixed_13(r.out);
  EXPECT_EQ(parsed.out_of_bounds_verdict, "FAILED");
  EXPECT_EQ(parsed.out_of_bounds, 4); // 2 sizes x 2 placements, rank 2 each time
  ASSERT_EQ(parsed.rows.size(), 2u);
  EXPECT_EQ(parsed.rows[0].oop_wrong, "1");
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = json::parse(text.str(), "report");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  const auto& failures = (*doc)["fabric"]["check_failures"];
  ASSERT_EQ(failures.Size(), 4u);
  EXPECT_EQ(failures[0]["rank"].GetInt(), 2);
  EXPECT_EQ(failures[0]["wrong"].GetUint64(), 1u);
  EXPECT_STREQ((*doc)["out_of_bounds"]["okay"].GetString(), "false");
  std::remove(json.c_str());
}

TEST(NcclTestMpi, TheWatchdogNamesAStalledRankAndEndsTheRun) {
  const double timeout = 4;
  MpiRun r = mpirun(4, {"-b", "1K", "-e", "64K", "-f", "4", "-n", "5", "-T", "4"},
                    {{"FABRIC_NCCLTEST_FAULT", "stall=1@16K"}}, 90s);
  EXPECT_EQ(r.status, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("# Watchdog: no progress within 4.0 s (-T); aborting the run."),
            std::string::npos)
      << r.out << r.err;
  EXPECT_NE(r.out.find("# Watchdog: rank 1 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is behind every other rank"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in all_reduce 16384 B out-of-place timed loop"), std::string::npos)
      << r.out;
  // The run ends within the timeout plus a bound (start-up, the 1K and 4K sizes, the abort).
  EXPECT_LT(r.seconds, timeout + 20) << r.out;
  // The order is carried out by a main thread (the only one that calls MPI): the stalled rank's,
  // which polls for it; rank 0's watchdog thread only posts it (its main thread is inside
  // an MPI collective, waiting for rank 1). The exit status 5 is the code given to
  // MPI_Abort; Open MPI's notice names the rank that called it, when its help system manages
  // to print one (seen once: "ORTE_ERROR_LOG: Out of resource in file .../show_help.c").
  if (r.err.find("MPI_ABORT was invoked on rank ") != std::string::npos) {
    EXPECT_NE(r.err.find("MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD"),
              std::string::npos)
        << r.err;
  } else {
    EXPECT_NE(r.err.find("show_help.c"), std::string::npos)
        << "neither Open MPI's abort notice nor its failure to print one:\n"
        << r.err;
  }
}

// -z 1 as nccl-tests: each operation waited for and followed by a barrier of every rank
// (a rank that skipped one would leave the others in it: the run would not end).
TEST(NcclTestMpi, BlockingBarriersAfterEachOperation) {
  MpiRun r = mpirun(4, {"-b", "4K", "-e", "64K", "-f", "4", "-n", "3", "-m", "2", "-z", "1"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# Blocking Enabled: wait and barrier after each inner iteration (-m) "
                       "\n"),
            std::string::npos)
      << r.out;
  testing::ParsedRun parsed = testing::parse_fixed_13(r.out);
  ASSERT_EQ(parsed.rows.size(), 3u) << r.out;
  for (const auto& row : parsed.rows) {
    EXPECT_EQ(row.oop_wrong, "0");
    EXPECT_EQ(row.ip_wrong, "0");
  }
}

TEST(NcclTestMpi, PairsNameAnInjectedSlowPair) {
  const std::string heatmap = temp_path("pairs.svg");
  MpiRun r = mpirun(
      4, {"--pairs", "--pairs-by", "rank", "-e", "4K", "-n", "20", "--pairs-heatmap", heatmap},
      // Ranks that wait yield their core: 4 ranks share 2 cores here.
      {{"FABRIC_NCCLTEST_FAULT", "slow-pair=1-2"}, {"OMPI_MCA_mpi_yield_when_idle", "1"}});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# Pairs: all_reduce 4096 B float sum on every pair of 4 ranks"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# Slow pair: rank1@"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# Verdict: slow pair rank1@"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SLOW\n"), std::string::npos) << r.out; // no node is slow with everyone
  std::ifstream svg(heatmap);
  std::stringstream svg_text;
  svg_text << svg.rdbuf();
  EXPECT_NE(svg_text.str().find("<svg"), std::string::npos);
  EXPECT_NE(svg_text.str().find("rank2@"), std::string::npos);
  std::remove(heatmap.c_str());
}

// At scale --pairs runs a pattern, then narrows down: a ring over 4 ranks loads every rank
// in 2 rounds (4 here, one pair at a time); its one low pair could be either rank's fault
// or their path's, and follow-up rounds against the other ranks tell which.
TEST(NcclTestMpi, PairsRingNarrowsDownToAnInjectedSlowPath) {
  MpiRun r = mpirun(
      4, {"--pairs", "--pairs-by", "rank", "--pairs-pattern", "ring", "-e", "4K", "-n", "20"},
      {{"FABRIC_NCCLTEST_FAULT", "slow-pair=1-2"}, {"OMPI_MCA_mpi_yield_when_idle", "1"}});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# Pairs: all_reduce 4096 B float sum over 4 ranks, 20 iterations each, "
                       "ring: 2 rounds"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# Follow-up rounds, narrowing down:"), std::string::npos) << r.out;
  const auto verdict = r.out.find("# Verdict: path rank");
  ASSERT_NE(verdict, std::string::npos) << r.out;
  const std::string line = r.out.substr(verdict, r.out.find('\n', verdict) - verdict);
  EXPECT_NE(line.find("rank1@"), std::string::npos) << line;
  EXPECT_NE(line.find("rank2@"), std::string::npos) << line;
  EXPECT_NE(line.find("slow between these two only"), std::string::npos) << line;
}

TEST(NcclTestMpi, ResultFilesFromARealRun) {
  const std::string json = temp_path("run.json"), prom = temp_path("run.prom"),
                    plot = temp_path("run.svg");
  MpiRun r = mpirun(
      4, {"-b", "1K", "-e", "1M", "-f", "4", "-n", "3", "-J", json, "--prom", prom, "--plot", plot},
      {{"NCCL_TESTS_MIN_BW", "0.000001"}, {"NCCL_SECRET_TOKEN", "hunter2"}});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# Writing JSON output to " + json), std::string::npos);
  EXPECT_NE(r.out.find("# Avg bus bandwidth    : "), std::string::npos);
  EXPECT_NE(r.out.find(" OK\n# Line-rate ceiling"), std::string::npos) << r.out;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().find("hunter2"), std::string::npos);
  auto doc = json::parse(text.str(), "report");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["results"].Size(), 6u);
  EXPECT_EQ((*doc)["fabric"]["nranks"].GetInt(), 4);
  EXPECT_EQ((*doc)["fabric"]["results"][0]["out_of_place"]["rank_time_us"].Size(), 4u);
  auto promtool = run_subprocess({"promtool", "check", "metrics"}, {[&] {
                                                                      std::ifstream p(prom);
                                                                      std::stringstream s;
                                                                      s << p.rdbuf();
                                                                      return s.str();
                                                                    }(),
                                                                    std::nullopt});
  if (promtool.ok()) {
    EXPECT_EQ(promtool->exit_status, 0) << promtool->stderr_text;
  }
  std::ifstream svg(plot);
  std::stringstream svg_text;
  svg_text << svg.rdbuf();
  EXPECT_NE(svg_text.str().find("all_reduce bus bandwidth, 4 ranks on 1 node, mpi backend"),
            std::string::npos);
  for (const auto& p : {json, prom, plot})
    std::remove(p.c_str());
}

TEST(NcclTestMpi, AThresholdTheRunMissesExits3) {
  MpiRun r = mpirun(
      2, {"-b", "64M", "-e", "64M", "-n", "2", "-w", "0", "-c", "0", "--min-busbw", "100000"});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("average over sizes >= 64 MiB, required 100000 GB/s: FAILED"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("N/A"), std::string::npos); // -c 0: nothing checked
}

TEST(NcclTestMpi, StartedAloneTheMpiBackendRunsOneRank) {
  SubprocessOptions options;
  options.timeout = 60s;
  auto r = run_subprocess(
      {FABRIC_NCCLTEST_BINARY, "--backend", "mpi", "-b", "8", "-e", "64", "-f", "8", "-n", "2"},
      options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 0) << r->stderr_text;
  EXPECT_NE(r->stdout_text.find("1 rank on 1 node, started alone"), std::string::npos)
      << r->stdout_text;
  EXPECT_EQ(testing::parse_fixed_13(r->stdout_text).rows.size(), 2u);
}

// nccl-tests' -g, -t and -R mean GPUs, threads and NCCL buffers; on host memory a script
// written for nccl-tests still runs, one rank per process, and the header says so.
TEST(NcclTestMpi, GpuFlagsOnTheMpiBackendAreNotedNotRefused) {
  MpiRun r = mpirun(2, {"--backend", "mpi", "-b", "8", "-e", "64", "-f", "8", "-n", "2", "-g", "8",
                        "-t", "2", "-R", "1"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# nThread 1 nGpus 1 minBytes 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# -g 8 -t 2 ignored: the mpi backend runs one rank per process"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# -R 1 ignored"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#  Rank  1 Group  0"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("#  Rank  2 "), std::string::npos) << r.out;
  EXPECT_EQ(testing::parse_fixed_13(r.out).rows.size(), 2u);
}

TEST(NcclTestMpi, AnErrorEveryRankMeetsIsPrintedOnce) {
  MpiRun r = mpirun(4, {"--collective", "broadcast", "-r", "7", "-b", "8", "-e", "8"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  std::size_t count = 0;
  for (std::size_t at = 0; (at = r.err.find("-r/--root: 7 is not a rank", at)) != std::string::npos;
       ++at) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << r.err;
}

} // namespace
} // namespace fabric::nccltest
