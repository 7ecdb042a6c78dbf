// The exporter's reader over a directory of plugin files, a /proc look-alike and the
// kubelet's pod log directories: several processes of several pods, one malformed file,
// exited processes ageing out, hostile entries, and the bounds on what is served.
#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "exporters/nccl_profiler/profile_reader.h"
#include "test_support.h"

namespace fabric::nccl_profiler {
namespace {

using std::chrono::seconds;
using Clock = std::chrono::system_clock;

constexpr uint64_t kPodA = 4026532001, kPodB = 4026532002;
constexpr uint64_t kWorld = 0x9f86d081884c7d65, kLocal = 0x1234567800000001;
const std::string kUidA = "6f1c2f0e-5a7b-4c2d-9e1f-0a1b2c3d4e5f";
const std::string kUidB = "7a2d3f1e-6b8c-4d3e-8f2a-1b2c3d4e5f60";

std::string cgroup_of(const std::string& uid) {
  std::string systemd_uid = uid;
  std::replace(systemd_uid.begin(), systemd_uid.end(), '-', '_');
  return "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + systemd_uid +
         ".slice/cri-containerd-0123.scope\n";
}

ProfileCell all_reduce_1m(uint64_t ops) {
  // ops of 1 MiB, each 100 us; the last interval ran a tenth of them.
  return {Collective::kAllReduce, 1 << 20,          ops, ops << 20, ops, ops << 20, ops * 100000,
          (ops / 10) << 20,       ops / 10 * 100000};
}

class ReaderTest : public ::testing::Test {
protected:
  ReaderTest() : proc_(proc_dir_.path(), kInitialPidNamespace) {
    now_ = Clock::now();
    testing::write_text(logs_ / ("training_trainer-0_" + kUidA) + "/.keep", "");
    testing::write_text(logs_ / ("training_trainer-1_" + kUidB) + "/.keep", "");
  }

  ReaderOptions options() {
    ReaderOptions o;
    o.dir = dir_.path();
    o.proc_root = proc_dir_.path();
    o.cni_state_dir = "";
    o.pod_log_dir = logs_.path();
    return o;
  }

  static ProcessProfile process(int64_t pid, uint64_t ns, uint64_t start,
                                std::vector<CommProfile> comms) {
    ProcessProfile p;
    p.pid = pid;
    p.pid_ns = ns;
    p.start_ticks = start;
    p.interval_ms = 10000;
    p.sequence = 1;
    p.abi = "ncclProfiler_v5";
    p.comms = std::move(comms);
    return p;
  }

  // Writes the process's file as the plugin does (a new file renamed over the old one),
  // last written `age` before now.
  std::string write(const ProcessProfile& p, seconds age = seconds(1)) {
    std::string name = profile_file_name(p.pid, p.pid_ns, p.start_ticks);
    testing::write_text(dir_ / (name + ".tmp"), render_profile(p));
    std::filesystem::rename(dir_ / (name + ".tmp"), dir_ / name);
    set_age(name, age);
    return name;
  }
  void set_age(const std::string& name, seconds age) {
    auto when = now_ - age;
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
    timespec times[2] = {{ns / 1000000000, ns % 1000000000}, {ns / 1000000000, ns % 1000000000}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (dir_ / name).c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }

  Snapshot read(ProfileReader& reader, seconds later = seconds(0)) {
    auto snapshot = reader.read(now_ + later);
    EXPECT_TRUE(snapshot.ok()) << snapshot.error().message();
    return snapshot.ok() ? *snapshot : Snapshot{};
  }

  static const Series* find(const Snapshot& s, std::string_view collective, uint64_t hash,
                            uint64_t size, std::string_view pod) {
    char comm[9];
    std::snprintf(comm, sizeof comm, "%08llx", static_cast<unsigned long long>(hash >> 32));
    for (const auto& series : s.series) {
      const auto& l = series.labels;
      if (l.collective == collective && l.comm == comm && l.size_bytes == size &&
          l.pod_name == pod) {
        return &series;
      }
    }
    return nullptr;
  }

  // Two ranks of the world communicator in pod trainer-0 (one container, its own pid
  // namespace), one in trainer-1, and a process outside any pod with a local one.
  void write_job() {
    proc_.add(1001, kPodA, 1, 500, cgroup_of(kUidA));
    proc_.add(1002, kPodA, 2, 510, cgroup_of(kUidA));
    proc_.add(2001, kPodB, 1, 520, cgroup_of(kUidB));
    proc_.add(3001, kInitialPidNamespace, 3001, 530);
    write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}}}));
    write(process(2, kPodA, 510,
                  {{kWorld,
                    16,
                    1,
                    2,
                    {all_reduce_1m(100), {Collective::kSend, 8, 5, 40, 5, 40, 500, 0, 0}}}}));
    write(process(1, kPodB, 520, {{kWorld, 16, 2, 2, {all_reduce_1m(300)}}}));
    write(process(3001, kInitialPidNamespace, 530, {{kLocal, 2, 0, 1, {all_reduce_1m(10)}}}));
  }

  testing::TempDir dir_, proc_dir_, logs_;
  testing::FakeProc proc_;
  Clock::time_point now_;
};

TEST_F(ReaderTest, OneSeriesPerCollectiveCommunicatorSizeAndPod) {
  write_job();
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files, 4u);
  EXPECT_EQ(s.stats.processes_alive, 4u);
  ASSERT_EQ(s.series.size(), 4u);

  const Series* a = find(s, "all_reduce", kWorld, 1 << 20, "trainer-0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->labels.comm, "9f86d081");
  EXPECT_EQ(a->labels.nranks, 16);
  EXPECT_EQ(a->labels.pod_namespace, "training");
  EXPECT_EQ(a->values.operations, 200u) << "both ranks of the pod";
  EXPECT_EQ(a->values.bytes, 200u << 20);
  EXPECT_EQ(a->values.busy_ns, 200u * 100000);
  // 20 MiB in 2 ms over the last intervals; all_reduce over 16 ranks: busbw = 2*15/16 algbw.
  ASSERT_TRUE(a->values.algbw && a->values.busbw);
  EXPECT_DOUBLE_EQ(*a->values.algbw, (20.0 * (1 << 20)) / 0.002);
  EXPECT_DOUBLE_EQ(*a->values.busbw, *a->values.algbw * 30 / 16);

  const Series* b = find(s, "all_reduce", kWorld, 1 << 20, "trainer-1");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->values.operations, 300u);
  const Series* send = find(s, "send", kWorld, 8, "trainer-0");
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->values.operations, 5u);
  EXPECT_FALSE(send->values.busbw.has_value()) << "nothing timed in the last interval";
  const Series* local = find(s, "all_reduce", kLocal, 1 << 20, "");
  ASSERT_NE(local, nullptr) << "a process outside any pod has empty pod labels";
  EXPECT_EQ(local->labels.pod_namespace, "");
  EXPECT_EQ(local->values.operations, 10u);
}

TEST_F(ReaderTest, AMalformedFileIsSkippedAndCountedOnce) {
  write_job();
  testing::write_text(dir_ / "nccl-4026532001-7-700.prof", "fabric-nccl-profile 1\npid 7\n");
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files, 5u);
  EXPECT_EQ(s.stats.files_malformed_total, 1u);
  EXPECT_EQ(s.series.size(), 4u) << "the others are served";
  s = read(reader);
  EXPECT_EQ(s.stats.files_malformed_total, 1u) << "an unchanged file is not read again";
  testing::write_text(dir_ / "nccl-4026532001-7-700.prof", "garbage, longer than before\n");
  s = read(reader);
  EXPECT_EQ(s.stats.files_malformed_total, 2u);
}

TEST_F(ReaderTest, AFileThatTurnsMalformedKeepsItsLastCounters) {
  write_job();
  ProfileReader reader(options());
  read(reader);
  std::string name = profile_file_name(1, kPodB, 520);
  testing::write_text(dir_ / name, "fabric-nccl-profile 1\ncut");
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files_malformed_total, 1u);
  const Series* b = find(s, "all_reduce", kWorld, 1 << 20, "trainer-1");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->values.operations, 300u);
}

TEST_F(ReaderTest, ExitedProcessesAreServedAWhileThenAgeOut) {
  write_job();
  ProfileReader reader(options());
  read(reader);
  proc_.remove(1002); // rank 1 of trainer-0 exits; its file was written 1 s ago
  Snapshot s = read(reader, seconds(10));
  EXPECT_EQ(s.stats.processes_exited, 1u);
  const Series* a = find(s, "all_reduce", kWorld, 1 << 20, "trainer-0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->values.operations, 200u) << "its final counts are still served";
  EXPECT_DOUBLE_EQ(*a->values.algbw, (10.0 * (1 << 20)) / 0.001) << "but not its bandwidth";
  ASSERT_NE(find(s, "send", kWorld, 8, "trainer-0"), nullptr);

  // Past retain_exited (300 s after its last write): forgotten. The series that the pod's
  // other rank keeps alive does not go back; the one only the exited rank had is gone.
  s = read(reader, seconds(301));
  EXPECT_EQ(s.stats.files_expired, 1u);
  a = find(s, "all_reduce", kWorld, 1 << 20, "trainer-0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->values.operations, 200u);
  EXPECT_EQ(find(s, "send", kWorld, 8, "trainer-0"), nullptr);

  // The pod's last process goes too: its series ends.
  proc_.remove(1001);
  s = read(reader, seconds(302));
  EXPECT_EQ(s.stats.files_expired, 2u);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-0"), nullptr);
  EXPECT_EQ(s.series.size(), 2u);
}

TEST_F(ReaderTest, CountersGrowAcrossRewritesAndNeverGoBack) {
  write_job();
  ProfileReader reader(options());
  read(reader);
  // The live rank goes on: its next file has more.
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(150)}}}));
  Snapshot s = read(reader);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-0")->values.operations, 250u);
  // A file whose counters went back (not something the plugin writes) cannot take the
  // series back either.
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(20)}}}), seconds(2));
  s = read(reader);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-0")->values.operations, 250u);
}

TEST_F(ReaderTest, AReusedPidIsAnotherProcess) {
  proc_.add(1001, kPodA, 1, 999, cgroup_of(kUidA)); // pid 1 of that namespace, started later
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}}}));
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.processes_exited, 1u);
  ASSERT_EQ(s.series.size(), 1u);
  EXPECT_EQ(s.series[0].labels.pod_name, "") << "the pod of the new process is not this one's";
}

TEST_F(ReaderTest, OutOfSightProcessesAgeByTheirFile) {
  // A reader in a pid namespace of its own sees no other process: a file's age says
  // whether its writer still runs (three missed 10 s flushes: exited).
  testing::FakeProc own(proc_dir_.path(), 4026532999);
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}}}), seconds(5));
  write(process(1, kPodB, 520, {{kWorld, 16, 2, 2, {all_reduce_1m(300)}}}), seconds(31));
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.processes_alive, 1u);
  EXPECT_EQ(s.stats.processes_exited, 1u);
  ASSERT_EQ(s.series.size(), 1u) << "same labels: no pod can be named from here";
  EXPECT_EQ(s.series[0].values.operations, 400u);
  EXPECT_DOUBLE_EQ(*s.series[0].values.algbw, (10.0 * (1 << 20)) / 0.001);
  s = read(reader, seconds(270));
  EXPECT_EQ(s.stats.files_expired, 1u);
  EXPECT_EQ(s.series[0].values.operations, 400u);
}

TEST_F(ReaderTest, HostileEntriesAreRefusedWithoutHarm) {
  write_job();
  namespace fs = std::filesystem;
  // A link to a file the exporter may read but must not publish, a FIFO that would block
  // a plain open, a directory, a file too large, and a file that claims another process.
  fs::create_symlink("/etc/passwd", dir_ / "nccl-1-2-3.prof");
  ASSERT_EQ(::mkfifo((dir_ / "nccl-1-2-4.prof").c_str(), 0644), 0);
  fs::create_directory(dir_ / "nccl-1-2-5.prof");
  testing::write_text(dir_ / "nccl-1-2-6.prof", std::string(5 << 20, 'x'));
  testing::write_text(
      dir_ / "nccl-1-2-7.prof",
      render_profile(process(1, kPodB, 520, {{kWorld, 16, 2, 2, {all_reduce_1m(999)}}})));
  testing::write_text(dir_ / ".nccl-1-2-8.prof.tmp.99", "being written");
  testing::write_text(dir_ / "README", "not a profile");
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files, 9u);
  EXPECT_EQ(s.stats.files_refused_total, 4u);
  EXPECT_EQ(s.stats.files_malformed_total, 1u);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-1")->values.operations, 300u)
      << "the impostor's 999 are not counted";
  read(reader);
  EXPECT_EQ(reader.read(now_)->stats.files_refused_total, 4u) << "counted once per change";
}

TEST_F(ReaderTest, OnlySoManyFilesAreRead) {
  write_job();
  ReaderOptions o = options();
  o.max_files = 2;
  ProfileReader reader(o);
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files, 2u);
  EXPECT_EQ(s.stats.files_refused_total, 2u);
}

// Nothing deletes the files of exited processes: however many pile up, the ones read are
// the newest, so a running job is never crowded out by names that sort before its own.
TEST_F(ReaderTest, FilesOfLongExitedProcessesNeverHideARunningOne) {
  for (int64_t pid = 1; pid <= 5; ++pid) {
    write(process(pid, kPodA, 100 + pid, {{kLocal, 2, 0, 1, {all_reduce_1m(1)}}}),
          seconds(3600 + pid));
  }
  proc_.add(9001, kPodB, 9, 900, cgroup_of(kUidB));
  write(process(9, kPodB, 900, {{kWorld, 16, 2, 2, {all_reduce_1m(300)}}}));
  ReaderOptions o = options();
  o.max_files = 2;
  ProfileReader reader(o);
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files, 2u);
  EXPECT_EQ(s.stats.files_refused_total, 4u);
  const Series* live = find(s, "all_reduce", kWorld, 1 << 20, "trainer-1");
  ASSERT_NE(live, nullptr) << "the running process's file was left out";
  EXPECT_EQ(live->values.operations, 300u);
}

TEST_F(ReaderTest, SeriesAreBoundedAndKeepTheirPlace) {
  write_job();
  ReaderOptions o = options();
  o.max_series = 3;
  ProfileReader reader(o);
  Snapshot s = read(reader);
  ASSERT_EQ(s.series.size(), 3u);
  EXPECT_EQ(s.stats.series_dropped, 1u);
  std::vector<SeriesLabels> first;
  for (const auto& series : s.series)
    first.push_back(series.labels);
  // A new communicator whose labels sort first does not push out a served series.
  proc_.add(4001, kInitialPidNamespace, 4001, 540);
  write(process(4001, kInitialPidNamespace, 540,
                {{0x0000000100000000, 2, 0, 1, {all_reduce_1m(1)}}}));
  s = read(reader);
  ASSERT_EQ(s.series.size(), 3u);
  EXPECT_EQ(s.stats.series_dropped, 2u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(s.series[i].labels, first[i]);
}

TEST_F(ReaderTest, ManySizesAndCommunicatorsStayBounded) {
  // A process sweeping every size of every collective over many communicators.
  std::vector<CommProfile> comms;
  for (uint64_t c = 0; c < 100; ++c) {
    CommProfile comm{(c + 1) << 32, 8, 0, 1, {}};
    for (unsigned b = 0; b < kSizeBuckets; ++b) {
      for (Collective k : {Collective::kAllReduce, Collective::kAllGather, Collective::kSend}) {
        comm.cells.push_back({k, bucket_lower_bound(b), 1, bucket_lower_bound(b), 0, 0, 0, 0, 0});
      }
    }
    comms.push_back(std::move(comm));
  }
  proc_.add(5001, kInitialPidNamespace, 5001, 550);
  write(process(5001, kInitialPidNamespace, 550, comms));
  ReaderOptions o = options();
  o.max_series = 1000;
  ProfileReader reader(o);
  Snapshot s = read(reader);
  EXPECT_EQ(s.series.size(), 1000u);
  EXPECT_EQ(s.stats.series_dropped, 100u * kSizeBuckets * 3 - 1000);
}

TEST_F(ReaderTest, TheDirectoryItself) {
  ReaderOptions o = options();
  o.dir = dir_ / "not-yet";
  ProfileReader missing(o);
  auto empty = missing.read(now_);
  ASSERT_TRUE(empty.ok()) << "no job has run here yet";
  EXPECT_TRUE(empty->series.empty());
  testing::write_text(dir_ / "a-file", "");
  o.dir = dir_ / "a-file";
  ProfileReader not_a_dir(o);
  auto error = not_a_dir.read(now_);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.error().message().find("a-file"), std::string::npos);
}

} // namespace
} // namespace fabric::nccl_profiler
