// gpu tier: a real NCCL all-reduce with the plugin loaded. fabric-nccltest runs one rank
// per GPU under mpirun with NCCL_PROFILER_PLUGIN naming the built plugin; the reader then
// finds, in the plugin's files, the all-reduce bytes the run moved, within a few percent
// of what fabric-nccltest reports it ran.
//
// Skips without two CUDA devices (a one-rank all-reduce is a local copy NCCL does not
// profile), without fabric-nccltest in this tree, or without mpirun.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "common/cuda_runtime.h"
#include "common/json.h"
#include "common/subprocess.h"
#include "exporters/nccl_profiler/profile_reader.h"
#include "tests/gpu/program_path.h"

namespace fabric::nccl_profiler {
namespace {

class NcclProfilerGpu : public ::testing::Test {
protected:
  void SetUp() override {
    auto count = cuda::device_count();
    if (!count.ok()) GTEST_SKIP() << count.error().message();
    if (*count < 2) GTEST_SKIP() << "needs 2 CUDA devices, found " << *count;
    devices_ = *count;
    if (FABRIC_GPU_PROGRAM(FABRIC_NCCLTEST_BINARY).empty()) {
      GTEST_SKIP() << "fabric-nccltest is not built in this tree";
    }
    if (FABRIC_GPU_PROGRAM(FABRIC_MPIEXEC).empty()) GTEST_SKIP() << "no mpirun (Open MPI) found";
    char dir[] = "/tmp/fabric-nccl-gpu-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  int devices_ = 0;
  std::string dir_;
};

TEST_F(NcclProfilerGpu, TheReaderSeesTheAllReduceBytesTheRunMoved) {
  const std::string json_path = dir_ + "/run.json";
  // Long enough that every rank writes its file (every second) while it runs.
  const int iters = 200, warmup = 5;
  // One rank per GPU on this host; the plugin's variables reach every rank through -x.
  std::vector<std::string> argv = {FABRIC_GPU_PROGRAM(FABRIC_MPIEXEC),
                                   "-np",
                                   std::to_string(devices_),
                                   "--oversubscribe",
                                   "-x",
                                   "NCCL_PROFILER_PLUGIN=" +
                                       FABRIC_GPU_PROGRAM(FABRIC_NCCL_PROFILER_PLUGIN),
                                   "-x",
                                   "FABRIC_NCCL_DIR=" + dir_,
                                   "-x",
                                   "FABRIC_NCCL_FLUSH_S=1",
                                   FABRIC_GPU_PROGRAM(FABRIC_NCCLTEST_BINARY),
                                   "--backend",
                                   "nccl",
                                   "--collective",
                                   "all_reduce",
                                   "-b",
                                   "8",
                                   "-e",
                                   "64M",
                                   "-f",
                                   "8",
                                   "-n",
                                   std::to_string(iters),
                                   "-w",
                                   std::to_string(warmup),
                                   "-c",
                                   "0",
                                   "-J",
                                   json_path};
  SubprocessOptions options;
  options.timeout = std::chrono::minutes(5);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  // The exporter reads while the job runs: a file counts only once it has been bound to
  // its running process (README.md, "Binding"); the last write, at the ranks' exit, is
  // then read after they are gone.
  ReaderOptions reader_options;
  reader_options.dir = dir_;
  ProfileReader reader(reader_options);
  std::atomic<bool> finished{false};
  std::thread scraper([&] {
    while (!finished.load()) {
      (void)reader.read();
      std::this_thread::sleep_for(std::chrono::milliseconds(100)); // a scrape interval
    }
  });
  auto run = run_subprocess(argv, options);
  finished = true;
  scraper.join();
  ASSERT_TRUE(run.ok()) << run.error().message();
  ASSERT_EQ(run->exit_status, 0) << run->stdout_text << run->stderr_text;

  // What fabric-nccltest says it ran: each size, out of place and in place, its warm-up
  // and timed iterations, on every rank.
  std::ifstream in(json_path);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = json::parse(text.str(), json_path);
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  ASSERT_TRUE(doc->HasMember("results") && (*doc)["results"].IsArray());
  double expected_per_rank = 0;
  for (const auto& row : (*doc)["results"].GetArray()) {
    expected_per_rank += static_cast<double>(row["size"].GetUint64()) * 2 * (iters + warmup);
  }
  ASSERT_GT(expected_per_rank, 0);

  auto snapshot = reader.read();
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message();
  EXPECT_EQ(snapshot->stats.files, static_cast<std::size_t>(devices_)) << "one file per rank";
  EXPECT_EQ(snapshot->stats.files_refused_total + snapshot->stats.files_malformed_total, 0u)
      << "a rank's file was not bound while it ran";
  double bytes = 0, timed = 0, busy = 0;
  for (const auto& series : snapshot->series) {
    if (series.labels.collective != "all_reduce" || series.labels.nranks != devices_) continue;
    bytes += static_cast<double>(series.values.bytes);
    timed += static_cast<double>(series.values.timed_bytes);
    busy += static_cast<double>(series.values.busy_ns);
  }
  double per_rank = bytes / devices_;
  EXPECT_NEAR(per_rank, expected_per_rank, 0.03 * expected_per_rank);
  EXPECT_GT(timed, 0.97 * bytes) << "nearly every all-reduce was timed by its kernel channels";
  EXPECT_GT(busy, 0);
}

} // namespace
} // namespace fabric::nccl_profiler
