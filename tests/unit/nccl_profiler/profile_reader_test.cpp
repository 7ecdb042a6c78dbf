// The exporter's reader over a directory of plugin files, a /proc look-alike and the
// kubelet's pod log directories: several processes of several pods, one malformed file,
// exited processes ageing out, hostile entries, and the bounds on what is served.
#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <limits>
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

std::string replace_interval(std::string text, const std::string& value) {
  std::size_t at = text.find("interval_ms ");
  std::size_t eol = text.find('\n', at);
  return text.replace(at, eol - at, "interval_ms " + value);
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
    testing::write_text(logs_.file("training_trainer-0_" + kUidA) + "/.keep", "");
    testing::write_text(logs_.file("training_trainer-1_" + kUidB) + "/.keep", "");
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
    testing::write_text(dir_.file(name + ".tmp"), render_profile(p));
    std::filesystem::rename(dir_.file(name + ".tmp"), dir_.file(name));
    set_age(name, age);
    return name;
  }
  void set_age(const std::string& name, seconds age) {
    auto when = now_ - age;
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
    timespec times[2] = {{ns / 1000000000, ns % 1000000000}, {ns / 1000000000, ns % 1000000000}};
    ASSERT_EQ(::utimensat(AT_FDCWD, dir_.file(name).c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
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
    write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}, {}}}));
    write(process(2, kPodA, 510,
                  {{kWorld,
                    16,
                    1,
                    2,
                    {all_reduce_1m(100), {Collective::kSend, 8, 5, 40, 5, 40, 500, 0, 0}},
                    {}}}));
    write(process(1, kPodB, 520, {{kWorld, 16, 2, 2, {all_reduce_1m(300)}, {}}}));
    write(process(3001, kInitialPidNamespace, 530, {{kLocal, 2, 0, 1, {all_reduce_1m(10)}, {}}}));
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

// The DaemonSet runs with hostPID and no CAP_SYS_PTRACE: other containers' ns/pid links
// are not readable, their status, stat and cgroup are. Processes are still found, by their
// pid inside their namespace and their start time, and named by pod.
TEST_F(ReaderTest, ProcessesAreFoundWithoutReadingTheirNamespace) {
  write_job();
  for (int64_t pid : {1001, 1002, 2001})
    proc_.hide_namespace(pid);
  // Another container's pid 1 that started at another time is not confused with trainer-1's.
  proc_.add(2501, 4026532555, 1, 999, cgroup_of(kUidA));
  proc_.hide_namespace(2501);
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.processes_alive, 4u);
  ASSERT_NE(find(s, "all_reduce", kWorld, 1 << 20, "trainer-0"), nullptr);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-0")->values.operations, 200u);
  ASSERT_NE(find(s, "all_reduce", kWorld, 1 << 20, "trainer-1"), nullptr);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-1")->values.operations, 300u);
  // Two candidates with the same inner pid and start time: the file is bound to neither.
  proc_.add(2502, 4026532556, 1, 520, cgroup_of(kUidA));
  proc_.hide_namespace(2502);
  constexpr uint64_t kAmbiguous = 0x7777000000000007;
  write(process(1, 4026532777, 520, {{kAmbiguous, 2, 0, 1, {all_reduce_1m(7)}, {}}}));
  s = read(reader);
  for (std::string_view pod : {"", "trainer-0", "trainer-1"})
    EXPECT_EQ(find(s, "all_reduce", kAmbiguous, 1 << 20, pod), nullptr) << pod;
  EXPECT_EQ(s.stats.refused[static_cast<std::size_t>(Refusal::kUnbound)], 1u);
}

TEST_F(ReaderTest, SeveralRanksOfOneProcessAddUp) {
  proc_.add(1001, kPodA, 1, 500, cgroup_of(kUidA));
  write(process(
      1, kPodA, 500,
      {{kWorld, 16, 0, 2, {all_reduce_1m(100)}, {}}, {kWorld, 16, 1, 2, {all_reduce_1m(50)}, {}}}));
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files_malformed_total, 0u);
  const Series* a = find(s, "all_reduce", kWorld, 1 << 20, "trainer-0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->values.operations, 150u);
}

TEST_F(ReaderTest, AMalformedFileIsSkippedAndCountedOnce) {
  write_job();
  testing::write_text(dir_.file("nccl-4026532001-7-700.prof"), "fabric-nccl-profile 1\npid 7\n");
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files, 5u);
  EXPECT_EQ(s.stats.files_malformed_total, 1u);
  EXPECT_EQ(s.series.size(), 4u) << "the others are served";
  s = read(reader);
  EXPECT_EQ(s.stats.files_malformed_total, 1u) << "an unchanged file is not read again";
  testing::write_text(dir_.file("nccl-4026532001-7-700.prof"), "garbage, longer than before\n");
  s = read(reader);
  EXPECT_EQ(s.stats.files_malformed_total, 2u);
}

TEST_F(ReaderTest, AFileThatTurnsMalformedKeepsItsLastCounters) {
  write_job();
  ProfileReader reader(options());
  read(reader);
  std::string name = profile_file_name(1, kPodB, 520);
  testing::write_text(dir_.file(name), "fabric-nccl-profile 1\ncut");
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
  EXPECT_EQ(s.stats.files_expired, 1u) << "the first one was removed";
  EXPECT_EQ(s.stats.files_removed_total, 2u);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-0"), nullptr);
  EXPECT_EQ(s.series.size(), 2u);
}

TEST_F(ReaderTest, CountersGrowAcrossRewritesAndNeverGoBack) {
  write_job();
  ProfileReader reader(options());
  read(reader);
  // The live rank goes on: its next file has more.
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(150)}, {}}}));
  Snapshot s = read(reader);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-0")->values.operations, 250u);
  // A file whose counters went back (not something the plugin writes) cannot take the
  // series back either.
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(20)}, {}}}), seconds(2));
  s = read(reader);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-0")->values.operations, 250u);
}

TEST_F(ReaderTest, AReusedPidIsAnotherProcess) {
  proc_.add(1001, kPodA, 1, 500, cgroup_of(kUidA));
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}, {}}}));
  ProfileReader reader(options());
  read(reader);
  // It exits, and pid 1 of that namespace is a later process of another pod.
  proc_.remove(1001);
  proc_.add(1001, kPodA, 1, 999, cgroup_of(kUidB));
  Snapshot s = read(reader, seconds(5));
  EXPECT_EQ(s.stats.processes_exited, 1u);
  ASSERT_EQ(s.series.size(), 1u);
  EXPECT_EQ(s.series[0].labels.pod_name, "trainer-0") << "the new process's pod is not this one's";
}

// A file can only be believed for a process this reader has seen running: otherwise
// anyone could write the counters of a process that never was, and keep them fresh.
TEST_F(ReaderTest, AFileOfAProcessThatIsNotRunningIsNotBelieved) {
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}, {}}}));
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_TRUE(s.series.empty());
  EXPECT_EQ(s.stats.refused[static_cast<std::size_t>(Refusal::kUnbound)], 1u);
  // A process that ran and exited: its last write, at its exit, is read after it is gone
  // and believed, since the file was bound while it ran and is still its uid's.
  proc_.add(1002, kPodA, 2, 510, cgroup_of(kUidA));
  std::string name = write(process(2, kPodA, 510, {{kWorld, 16, 1, 2, {all_reduce_1m(10)}, {}}}));
  read(reader);
  proc_.remove(1002);
  write(process(2, kPodA, 510, {{kWorld, 16, 1, 2, {all_reduce_1m(12)}, {}}}));
  s = read(reader, seconds(2));
  ASSERT_EQ(s.series.size(), 1u);
  EXPECT_EQ(s.series[0].values.operations, 12u);
  if (::geteuid() != 0) return; // the rest needs a file of another owner (chown)
  // Another uid's content under its name after it exited is not.
  write(process(2, kPodA, 510, {{kWorld, 16, 1, 2, {all_reduce_1m(999999)}, {}}}));
  ASSERT_EQ(::lchown(dir_.file(name).c_str(), 4242, 4242), 0);
  s = read(reader, seconds(3));
  EXPECT_EQ(s.stats.refused[static_cast<std::size_t>(Refusal::kOwnerMismatch)], 1u);
  ASSERT_EQ(s.series.size(), 1u);
  EXPECT_EQ(s.series[0].values.operations, 12u);
}

// The counters of a running process are written by that process, as its uid: a file
// under its name owned by anyone else (another tenant's overwrite) is not believed, and
// its counters cannot stay in the series afterwards.
TEST_F(ReaderTest, AFileNotOwnedByItsProcessIsNotBelieved) {
  const uint32_t other = ::geteuid() + 1000;
  proc_.add(1001, kPodA, 1, 500, cgroup_of(kUidA), other);
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}, {}}}));
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_TRUE(s.series.empty());
  EXPECT_EQ(s.stats.refused[static_cast<std::size_t>(Refusal::kOwnerMismatch)], 1u);

  // The victim writes its own file (its uid is now this test's); then an impostor of
  // another uid replaces it with inflated counters, and the victim writes again.
  proc_.add(1002, kPodB, 1, 520, cgroup_of(kUidB));
  write(process(1, kPodB, 520, {{kWorld, 16, 2, 2, {all_reduce_1m(300)}, {}}}));
  read(reader);
  proc_.add(1002, kPodB, 1, 520, cgroup_of(kUidB), other);
  write(process(1, kPodB, 520, {{kWorld, 16, 2, 2, {all_reduce_1m(1000000)}, {}}}));
  s = read(reader);
  EXPECT_EQ(s.stats.refused[static_cast<std::size_t>(Refusal::kOwnerMismatch)], 2u);
  ASSERT_NE(find(s, "all_reduce", kWorld, 1 << 20, "trainer-1"), nullptr);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-1")->values.operations, 300u);
  proc_.add(1002, kPodB, 1, 520, cgroup_of(kUidB));
  write(process(1, kPodB, 520, {{kWorld, 16, 2, 2, {all_reduce_1m(310)}, {}}}), seconds(0));
  s = read(reader);
  EXPECT_EQ(find(s, "all_reduce", kWorld, 1 << 20, "trainer-1")->values.operations, 310u)
      << "the impostor's counters were carried into the series";
}

// A modification time in the future is now: it cannot keep the file of an exited
// process served for ever.
TEST_F(ReaderTest, AFutureModificationTimeDoesNotKeepAFileYoung) {
  proc_.add(1001, kPodA, 1, 500, cgroup_of(kUidA));
  std::string name = write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}, {}}}));
  ProfileReader reader(options());
  read(reader);
  proc_.remove(1001);
  set_age(name, seconds(-36000)); // ten hours ahead
  EXPECT_EQ(read(reader, seconds(1)).series.size(), 1u);
  Snapshot s = read(reader, seconds(302));
  EXPECT_TRUE(s.series.empty()) << "served past retain_exited";
  EXPECT_EQ(s.stats.files_removed_total, 1u);
}

// Nothing else cleans /run: the files of exited processes go once they are no longer
// served, and so do the temporaries of writers killed mid-write (an OOM kill).
TEST_F(ReaderTest, FilesOfExitedProcessesAndDeadTemporariesAreRemoved) {
  write_job();
  std::string dead_temporary = profile_file_name(7, kPodA, 700) + ".tmp.7";
  std::string fresh_temporary = profile_file_name(2, kPodA, 510) + ".tmp.2";
  testing::write_text(dir_.file(dead_temporary), "fabric-nccl-profile 1\npid 7\n");
  testing::write_text(dir_.file(fresh_temporary), "fabric-nccl-profile 1\n");
  set_age(dead_temporary, seconds(61));
  testing::write_text(dir_.file("nccl-notes.txt"), "not ours");
  set_age("nccl-notes.txt", seconds(3600));
  ProfileReader reader(options());
  Snapshot s = read(reader);
  EXPECT_FALSE(std::filesystem::exists(dir_.file(dead_temporary)));
  EXPECT_TRUE(std::filesystem::exists(dir_.file(fresh_temporary))) << "being written right now";
  EXPECT_TRUE(std::filesystem::exists(dir_.file("nccl-notes.txt")));
  EXPECT_EQ(s.stats.files_removed_total, 1u);

  std::string exited = profile_file_name(2, kPodA, 510);
  proc_.remove(1002);
  read(reader, seconds(100));
  EXPECT_TRUE(std::filesystem::exists(dir_.file(exited))) << "still served";
  s = read(reader, seconds(302));
  EXPECT_FALSE(std::filesystem::exists(dir_.file(exited)));
  EXPECT_FALSE(std::filesystem::exists(dir_.file(fresh_temporary))) << "stale by now";
  EXPECT_EQ(s.stats.files_removed_total, 3u);
  EXPECT_TRUE(std::filesystem::exists(dir_.file(profile_file_name(1, kPodA, 500))));

  ReaderOptions keep = options();
  keep.remove_expired = false;
  proc_.remove(1001);
  ProfileReader keeping(keep);
  ASSERT_TRUE(keeping.read(now_).ok());
  ASSERT_TRUE(keeping.read(now_ + seconds(400)).ok());
  EXPECT_TRUE(std::filesystem::exists(dir_.file(profile_file_name(1, kPodA, 500))));
}

TEST_F(ReaderTest, OutOfSightProcessesAgeByTheirFile) {
  // A reader in a pid namespace of its own sees no other process: a file's age says
  // whether its writer still runs (three missed 10 s flushes: exited).
  testing::FakeProc own(proc_dir_.path(), 4026532999);
  write(process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}, {}}}), seconds(5));
  write(process(1, kPodB, 520, {{kWorld, 16, 2, 2, {all_reduce_1m(300)}, {}}}), seconds(31));
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
  fs::create_symlink("/etc/passwd", dir_.file("nccl-1-2-3.prof"));
  ASSERT_EQ(::mkfifo(dir_.file("nccl-1-2-4.prof").c_str(), 0644), 0);
  fs::create_directory(dir_.file("nccl-1-2-5.prof"));
  testing::write_text(dir_.file("nccl-1-2-6.prof"), std::string(5 << 20, 'x'));
  testing::write_text(
      dir_.file("nccl-1-2-7.prof"),
      render_profile(process(1, kPodB, 520, {{kWorld, 16, 2, 2, {all_reduce_1m(999)}, {}}})));
  testing::write_text(dir_.file(".nccl-1-2-8.prof.tmp.99"), "being written");
  testing::write_text(dir_.file("README"), "not a profile");
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
    write(process(pid, kPodA, 100 + pid, {{kLocal, 2, 0, 1, {all_reduce_1m(1)}, {}}}),
          seconds(3600 + pid));
  }
  proc_.add(9001, kPodB, 9, 900, cgroup_of(kUidB));
  write(process(9, kPodB, 900, {{kWorld, 16, 2, 2, {all_reduce_1m(300)}, {}}}));
  ReaderOptions o = options();
  o.max_files = 2;
  ProfileReader reader(o);
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files, 2u);
  EXPECT_EQ(s.stats.refused[static_cast<std::size_t>(Refusal::kOverFileLimit)], 4u);
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
                {{0x0000000100000000, 2, 0, 1, {all_reduce_1m(1)}, {}}}));
  s = read(reader);
  ASSERT_EQ(s.series.size(), 3u);
  EXPECT_EQ(s.stats.series_dropped, 2u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(s.series[i].labels, first[i]);
}

TEST_F(ReaderTest, ManySizesAndCommunicatorsStayBounded) {
  // A process sweeping every size of every collective over many communicators.
  std::vector<CommProfile> comms;
  for (uint64_t c = 0; c < 80; ++c) {
    CommProfile comm{(c + 1) << 32, 8, 0, 1, {}, {}};
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
  EXPECT_EQ(s.stats.series_dropped, 80u * kSizeBuckets * 3 - 1000);
}

static const Series* find_communicator(const Snapshot& s, uint64_t hash, std::string_view pod) {
  char comm[9];
  std::snprintf(comm, sizeof comm, "%08llx", static_cast<unsigned long long>(hash >> 32));
  for (const auto& series : s.communicators) {
    if (series.labels.comm == comm && series.labels.pod_name == pod) return &series;
  }
  return nullptr;
}

CommProfile world_rank(int rank, CommBusy busy, std::vector<ProfileCell> cells) {
  CommProfile comm{kWorld, 16, rank, 2, std::move(cells), busy};
  return comm;
}

// A communicator's own time, per pod: its ranks in the pod's processes add up, another
// pod's ranks of the same communicator are another series, and a plugin that does not
// write it (a file without the keys) gives no communicator series at all.
TEST_F(ReaderTest, ACommunicatorsOwnTimeIsServedPerPod) {
  proc_.add(1001, kPodA, 1, 500, cgroup_of(kUidA));
  proc_.add(1002, kPodA, 2, 510, cgroup_of(kUidA));
  proc_.add(2001, kPodB, 1, 520, cgroup_of(kUidB));
  proc_.add(3001, kInitialPidNamespace, 3001, 530);
  // Each rank: 100 MiB in 10 ms busy, 10 MiB in 1 ms of it in the last interval.
  const CommBusy busy{100 << 20, 10000000, 10 << 20, 1000000};
  write(process(1, kPodA, 500, {world_rank(0, busy, {all_reduce_1m(100)})}));
  write(process(2, kPodA, 510, {world_rank(1, busy, {all_reduce_1m(100)})}));
  write(process(1, kPodB, 520, {world_rank(2, {7 << 20, 2000000, 0, 0}, {all_reduce_1m(7)})}));
  write(process(3001, kInitialPidNamespace, 530, {{kLocal, 2, 0, 1, {all_reduce_1m(10)}, {}}}));
  ProfileReader reader(options());
  Snapshot s = read(reader);
  ASSERT_EQ(s.communicators.size(), 2u) << "none for the file without the keys";
  EXPECT_EQ(s.series.size(), 3u) << "the communicators are not collective series";
  const Series* a = find_communicator(s, kWorld, "trainer-0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->labels.collective, "");
  EXPECT_EQ(a->labels.nranks, 16);
  EXPECT_EQ(a->labels.pod_namespace, "training");
  EXPECT_EQ(a->values.timed_bytes, 200u << 20) << "both ranks of the pod";
  EXPECT_EQ(a->values.busy_ns, 20000000u);
  ASSERT_TRUE(a->values.algbw.has_value());
  EXPECT_DOUBLE_EQ(*a->values.algbw, (20.0 * (1 << 20)) / 0.002);
  EXPECT_FALSE(a->values.busbw.has_value()) << "no one collective's bus factor applies";
  const Series* b = find_communicator(s, kWorld, "trainer-1");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->values.timed_bytes, 7u << 20);
  EXPECT_EQ(b->values.busy_ns, 2000000u);
  EXPECT_FALSE(b->values.algbw.has_value()) << "nothing ran in its last interval";
  EXPECT_EQ(find_communicator(s, kLocal, ""), nullptr);

  // Rank 1 exits and ages out; what it counted stays with the pod's series.
  proc_.remove(1002);
  write(process(1, kPodA, 500, {world_rank(0, {150 << 20, 15000000, 0, 0}, {})}), seconds(1));
  s = read(reader, seconds(301));
  a = find_communicator(s, kWorld, "trainer-0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->values.busy_ns, 25000000u);
  EXPECT_EQ(a->values.timed_bytes, 250u << 20);
}

// A communicator's series takes a place in its writer's share like any other: a pod cannot
// get past its share by writing the communicators' keys.
TEST_F(ReaderTest, ACommunicatorsSeriesTakesItsWritersShare) {
  proc_.add(1001, kPodA, 1, 500, cgroup_of(kUidA));
  proc_.add(2001, kPodB, 1, 520, cgroup_of(kUidB));
  const CommBusy busy{1 << 20, 1000, 0, 0};
  std::vector<CommProfile> many;
  for (uint64_t c = 0; c < 5; ++c)
    many.push_back({(c + 1) << 32, 8, 0, 1, {all_reduce_1m(1)}, busy});
  write(process(1, kPodA, 500, many));
  write(process(1, kPodB, 520, {world_rank(2, busy, {all_reduce_1m(3)})}));
  ReaderOptions o = options();
  o.max_series_per_writer = 4;
  ProfileReader reader(o);
  Snapshot s = read(reader);
  std::size_t pod_a = 0;
  for (const auto* list : {&s.series, &s.communicators}) {
    for (const auto& series : *list)
      pod_a += series.labels.pod_name == "trainer-0";
  }
  EXPECT_EQ(pod_a, 4u);
  EXPECT_EQ(s.stats.series_dropped, 6u);
  ASSERT_NE(find_communicator(s, kWorld, "trainer-1"), nullptr);
  ASSERT_NE(find(s, "all_reduce", kWorld, 1 << 20, "trainer-1"), nullptr);
}

// One tenant cannot take what the others need: the files listed and the bytes read per
// file owner, and the series per pod, are shares of the whole.
TEST_F(ReaderTest, EveryWriterHasItsOwnShare) {
  if (::geteuid() != 0) GTEST_SKIP() << "files of two owners need chown (root)";
  const uint32_t tenant = 4242;
  // The tenant: many files of processes that look alive, with future times, each with
  // many series, all of them owned by it.
  for (int64_t pid = 1; pid <= 6; ++pid) {
    proc_.add(7000 + pid, kPodA, pid, 700, cgroup_of(kUidA), tenant);
    std::vector<CommProfile> comms;
    for (uint64_t c = 0; c < 10; ++c)
      comms.push_back({(pid * 100 + c + 1) << 32, 8, 0, 1, {all_reduce_1m(1)}, {}});
    std::string name = write(process(pid, kPodA, 700, comms), seconds(-3600));
    ASSERT_EQ(::lchown(dir_.file(name).c_str(), tenant, tenant), 0);
  }
  // The victim, in another pod, written after the tenant's files.
  proc_.add(9001, kPodB, 9, 900, cgroup_of(kUidB));
  write(process(9, kPodB, 900, {{kWorld, 16, 2, 2, {all_reduce_1m(300)}, {}}}), seconds(5));
  ReaderOptions o = options();
  o.max_files = 4;
  o.max_files_per_writer = 3;
  o.max_series = 20;
  o.max_series_per_writer = 15;
  ProfileReader reader(o);
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.files, 4u);
  EXPECT_EQ(s.stats.refused[static_cast<std::size_t>(Refusal::kOverFileLimit)], 3u);
  const Series* victim = find(s, "all_reduce", kWorld, 1 << 20, "trainer-1");
  ASSERT_NE(victim, nullptr) << "the tenant's files crowded the victim's out";
  EXPECT_EQ(victim->values.operations, 300u);
  std::size_t tenant_series = 0;
  for (const auto& series : s.series)
    tenant_series += series.labels.pod_name == "trainer-0";
  EXPECT_EQ(tenant_series, 15u);
  EXPECT_EQ(s.series.size(), 16u);

  // Bytes: the tenant's budget runs out before the victim's is touched.
  ReaderOptions tight = o;
  tight.max_bytes_per_writer = 1000;
  ProfileReader budgeted(tight);
  s = read(budgeted);
  EXPECT_GE(s.stats.refused[static_cast<std::size_t>(Refusal::kOverBudget)], 2u);
  ASSERT_NE(find(s, "all_reduce", kWorld, 1 << 20, "trainer-1"), nullptr);
}

// Numbers from a file are bounded before they are multiplied.
TEST_F(ReaderTest, ArithmeticOnFileNumbersCannotOverflow) {
  testing::FakeProc own(proc_dir_.path(), 4026532999); // out of sight: aged by interval
  ProcessProfile p = process(1, kPodA, 500, {{kWorld, 16, 0, 2, {all_reduce_1m(100)}, {}}});
  p.interval_ms = kMaxIntervalMs;
  write(p, seconds(3600));
  ReaderOptions o = options();
  o.missed_flushes = std::numeric_limits<int>::max();
  ProfileReader reader(o);
  Snapshot s = read(reader);
  EXPECT_EQ(s.stats.processes_alive, 1u);
  std::string name = profile_file_name(1, kPodB, 520);
  testing::write_text(dir_.file(name), replace_interval(render_profile(process(1, kPodB, 520, {})),
                                                        "99999999999999999"));
  s = read(reader);
  EXPECT_EQ(s.stats.files_malformed_total, 1u);
}

TEST_F(ReaderTest, TheDirectoryItself) {
  ReaderOptions o = options();
  o.dir = dir_.file("not-yet");
  ProfileReader missing(o);
  auto empty = missing.read(now_);
  ASSERT_TRUE(empty.ok()) << "no job has run here yet";
  EXPECT_TRUE(empty->series.empty());
  testing::write_text(dir_.file("a-file"), "");
  o.dir = dir_.file("a-file");
  ProfileReader not_a_dir(o);
  auto error = not_a_dir.read(now_);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.error().message().find("a-file"), std::string::npos);
}

} // namespace
} // namespace fabric::nccl_profiler
