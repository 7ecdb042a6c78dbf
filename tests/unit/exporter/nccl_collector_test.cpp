// The NCCL collector over a directory of plugin files as the plugin writes them, with a
// /proc look-alike: files of several processes, one malformed, one of a process that exited
// long ago; the served exposition passes promtool; the series stay within the budget when
// a job uses many message sizes and communicators.
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "common/subprocess.h"
#include "exporters/exposition.h"
#include "exporters/nccl_collector.h"
#include "tests/unit/nccl_profiler/test_support.h"

namespace fabric::exporters {
namespace {

using nccl_profiler::Collective;
using nccl_profiler::kInitialPidNamespace;
using nccl_profiler::ProcessProfile;
using nccl_profiler::testing::FakeProc;
using nccl_profiler::testing::TempDir;
using nccl_profiler::testing::write_text;

class NcclCollectorTest : public ::testing::Test {
protected:
  NcclCollectorTest() : proc_(proc_dir_.path(), kInitialPidNamespace) {}

  nccl_profiler::ReaderOptions options(std::size_t max_series = 10000) {
    nccl_profiler::ReaderOptions o;
    o.dir = dir_.path();
    o.proc_root = proc_dir_.path();
    o.cni_state_dir = "";
    o.pod_log_dir = "";
    o.retain_exited = std::chrono::seconds(300);
    o.max_series = max_series;
    return o;
  }

  // A process of the initial pid namespace with one communicator, all-reduces of 1 MiB
  // (each 100 us) and `sizes` other sizes of all-gather. The communicator's own time is
  // 80 us an all-reduce: each overlapped the next by 20 us.
  std::string write(int64_t pid, uint64_t comm, uint64_t ops, int sizes = 0,
                    std::chrono::seconds age = std::chrono::seconds(1)) {
    ProcessProfile p;
    p.pid = pid;
    p.pid_ns = kInitialPidNamespace;
    p.start_ticks = 100 + pid;
    p.interval_ms = 10000;
    p.sequence = 1;
    p.abi = "ncclProfiler_v5";
    nccl_profiler::CommProfile c{comm, 8, 0, 2, {}, {}};
    c.cells.push_back({Collective::kAllReduce, 1 << 20, ops, ops << 20, ops, ops << 20,
                       ops * 100000, (ops / 10) << 20, ops / 10 * 100000});
    for (int s = 0; s < sizes; ++s) {
      uint64_t size = uint64_t{1} << (s % 40);
      c.cells.push_back({Collective::kAllGather, size, 1, size, 1, size, 1000, 0, 0});
    }
    c.busy = nccl_profiler::CommBusy{ops << 20, ops * 80000, (ops / 10) << 20, ops / 10 * 80000};
    p.comms.push_back(c);
    std::string name = nccl_profiler::profile_file_name(p.pid, p.pid_ns, p.start_ticks);
    write_text(dir_.file(name), nccl_profiler::render_profile(p));
    auto when = std::chrono::system_clock::now() - age;
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
    timespec times[2] = {{ns / 1000000000, ns % 1000000000}, {ns / 1000000000, ns % 1000000000}};
    EXPECT_EQ(::utimensat(AT_FDCWD, dir_.file(name).c_str(), times, 0), 0);
    return name;
  }

  static double value(const std::vector<prometheus::MetricFamily>& families,
                      const std::string& family, const std::string& label,
                      const std::string& wanted) {
    for (const auto& f : families) {
      if (f.name != family) continue;
      for (const auto& m : f.metric) {
        for (const auto& l : m.label) {
          if (l.name == label && l.value == wanted) {
            return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
          }
        }
      }
    }
    return -1;
  }

  TempDir dir_, proc_dir_;
  FakeProc proc_;
};

TEST_F(NcclCollectorTest, ServesLiveProcessesSkipsTheMalformedAndAgesOutTheExited) {
  proc_.add(1001, kInitialPidNamespace, 1001, 100 + 1001);
  proc_.add(1002, kInitialPidNamespace, 1002, 100 + 1002);
  write(1001, 0xaaaa000000000001, 100);
  write(1002, 0xbbbb000000000002, 50);
  // A process that exited an hour ago: past retain_exited, not served.
  write(1003, 0xcccc000000000003, 70, 0, std::chrono::seconds(3600));
  // A file with a profile's name and garbage inside.
  write_text(dir_.file(nccl_profiler::profile_file_name(1004, kInitialPidNamespace, 1104)),
             "{\"schema_version\": 1, \"comms\": [[[[[[");
  proc_.add(1004, kInitialPidNamespace, 1004, 1104);

  NcclCollector collector(options());
  MetricSink sink;
  ASSERT_TRUE(collector.collect(sink).ok());
  EXPECT_EQ(sink.error_count(), 0u);
  auto families = sink.take();
  EXPECT_EQ(value(families, "fabric_nccl_operations_total", "comm", "aaaa0000"), 100);
  EXPECT_EQ(value(families, "fabric_nccl_bytes_total", "comm", "bbbb0000"), 50.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(value(families, "fabric_nccl_busy_seconds_total", "comm", "aaaa0000"),
                   100 * 100000 / 1e9);
  EXPECT_EQ(value(families, "fabric_nccl_operations_total", "comm", "cccc0000"), -1)
      << "an exited process's series outlived retain_exited";
  EXPECT_EQ(value(families, "fabric_nccl_files_rejected_total", "reason", "malformed"), 1);
  EXPECT_EQ(value(families, "fabric_nccl_files_rejected_total", "reason", "no_such_process"), 1)
      << "the process that exited before the exporter saw it";
  EXPECT_EQ(value(families, "fabric_nccl_files_rejected_total", "reason", "owner_mismatch"), 0);
  EXPECT_EQ(value(families, "fabric_nccl_processes", "state", "running"), 2);
  // busbw of all-reduce over 8 ranks: algbw x 2(n-1)/n, over the last interval's tenth.
  double algbw =
      value(families, "fabric_nccl_algorithm_bandwidth_bytes_per_second", "comm", "aaaa0000");
  EXPECT_NEAR(algbw, (1 << 20) / 100e-6, 1);
  EXPECT_NEAR(value(families, "fabric_nccl_bus_bandwidth_bytes_per_second", "comm", "aaaa0000"),
              algbw * 2 * 7 / 8, 1);

  // The communicator's own time: overlap counted once, so more bytes per busy second than
  // its all-reduces' series say.
  EXPECT_EQ(value(families, "fabric_nccl_communicator_timed_bytes_total", "comm", "aaaa0000"),
            100.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(
      value(families, "fabric_nccl_communicator_busy_seconds_total", "comm", "aaaa0000"),
      100 * 80000 / 1e9);
  EXPECT_NEAR(value(families, "fabric_nccl_communicator_algorithm_bandwidth_bytes_per_second",
                    "comm", "aaaa0000"),
              (1 << 20) / 80e-6, 1);
  EXPECT_EQ(value(families, "fabric_nccl_communicator_busy_seconds_total", "comm", "cccc0000"), -1);

  // What Prometheus would scrape is clean for promtool.
  auto r = run_subprocess({"promtool", "check", "metrics"}, {.stdin_text = render_text(families),
                                                             .environment = {},
                                                             .timeout = std::chrono::seconds(30)});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_status, 0) << r->stdout_text << r->stderr_text;
}

TEST_F(NcclCollectorTest, ManySizesAndCommunicatorsStayWithinTheBudget) {
  for (int pid = 2001; pid < 2021; ++pid) {
    proc_.add(pid, kInitialPidNamespace, pid, 100 + pid);
    write(pid, 0x1000000000000000 + (uint64_t(pid) << 32), 10, 40);
  }
  // Room for the 20 communicators' own series, and 40 of their 820 cells.
  const std::size_t budget = 20 * kNcclSamplesPerCommunicator + 40 * kNcclSamplesPerSeries;
  NcclCollector collector(options(60));
  MetricSink sink(budget);
  ASSERT_TRUE(collector.collect(sink).ok());
  EXPECT_LE(sink.series(), budget);
  EXPECT_GT(sink.dropped(), 0u) << "20 processes x 41 series cannot all fit";
  auto families = sink.take();
  std::size_t operations = 0, bytes = 0, comm_bytes = 0, comm_busy = 0;
  for (const auto& f : families) {
    if (f.name == "fabric_nccl_operations_total") operations = f.metric.size();
    if (f.name == "fabric_nccl_bytes_total") bytes = f.metric.size();
    if (f.name == "fabric_nccl_communicator_timed_bytes_total") comm_bytes = f.metric.size();
    if (f.name == "fabric_nccl_communicator_busy_seconds_total") comm_busy = f.metric.size();
  }
  EXPECT_EQ(operations, 40u);
  EXPECT_EQ(operations, bytes) << "a series' operations and bytes are served together";
  EXPECT_EQ(comm_busy, 20u) << "every communicator's whole is served before cells";
  EXPECT_EQ(comm_bytes, comm_busy) << "a communicator's bytes and time are served together";
}

} // namespace
} // namespace fabric::exporters
