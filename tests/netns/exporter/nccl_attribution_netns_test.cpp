// Pod attribution of the NCCL collector on the real kernel, as a node with hostPID runs it:
// two pods' training processes, each in its own pid namespace, under a kubelet-shaped pod
// cgroup, as a uid of its own, write their profiler files into the shared directory; the
// collector reads the real /proc and names each pod, and one pod overwriting the other's
// file changes nothing in the other's series. Pod names come from the kubelet's
// /var/log/pods-style directory names, made here; everything else is the kernel's.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "common/subprocess.h"
#include "exporters/nccl_collector.h"
#include "exporters/nccl_profiler/proc_stat.h"
#include "tests/netns/probe/probe_processes.h"
#include "tests/unit/exporter/metrics_view.h"

namespace fabric::exporters {
namespace {

namespace fs = std::filesystem;
using nccl_profiler::Collective;
using nccl_profiler::CommProfile;
using nccl_profiler::ProcessProfile;

constexpr uint64_t kJobComm = 0x5eed000000000001;

// The kubelet's cgroupfs layout, in the unified hierarchy (cgroup v2) or else v1's pids one.
std::string pod_cgroups() {
  bool unified = fs::exists("/sys/fs/cgroup/cgroup.controllers");
  return std::string(unified ? "/sys/fs/cgroup" : "/sys/fs/cgroup/pids") + "/kubepods/besteffort";
}
const std::string kPodCgroups = pod_cgroups();

// One pod's training process: `sleep` as `uid`, pid 1 of a new pid namespace, moved into
// the pod's cgroup the way the kubelet's runtime places a container.
struct TrainingPod {
  std::string name;
  std::string uid; // the pod's UID
  uint32_t user = 0;
  std::unique_ptr<fabric::testing::BackgroundProcess> launcher;
  pid_t pid = -1; // the training process, in the host's pid namespace
  std::string cgroup;
};

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

class NcclAttributionNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: pid namespaces, uids, cgroups";
    std::error_code ec;
    if (!fs::exists(fs::path(kPodCgroups).parent_path().parent_path()))
      GTEST_SKIP() << "no cgroup hierarchy at " << kPodCgroups;
    fs::create_directories(kPodCgroups, ec);
    if (ec) GTEST_SKIP() << "cannot make " << kPodCgroups << ": " << ec.message();
    fs::create_directories(dir_.file("nccl"));
    // The pods' uids reach the shared directory through the scratch directory.
    ::chmod(dir_.path().c_str(), 0711);
    // Every training pod mounts the directory and writes into it, as deployed.
    ::chmod(dir_.file("nccl").c_str(), 01777);
  }

  void TearDown() override {
    for (auto& pod : pods_) {
      // setpriv's change of uid clears the parent-death signal unshare --kill-child set:
      // the training process is killed by its pid, then unshare exits with it.
      if (pod.pid > 0) ::kill(pod.pid, SIGKILL);
      pod.launcher.reset();
      if (pod.cgroup.empty()) continue;
      fabric::testing::wait_for([&] { return first_line(pod.cgroup + "/cgroup.procs").empty(); },
                                std::chrono::seconds(5));
      ::rmdir(pod.cgroup.c_str());
      ::rmdir(fs::path(pod.cgroup).parent_path().c_str());
    }
    // Gone only when nothing else uses them.
    ::rmdir(kPodCgroups.c_str());
    ::rmdir(fs::path(kPodCgroups).parent_path().c_str());
  }

  TrainingPod& start_pod(const std::string& name, const std::string& uid, uint32_t user) {
    TrainingPod& pod = pods_.emplace_back();
    pod.name = name;
    pod.uid = uid;
    pod.user = user;
    fs::create_directories(dir_.file("pods/training_" + name + "_" + uid));
    std::string id = std::to_string(user);
    pod.launcher = std::make_unique<fabric::testing::BackgroundProcess>(
        std::vector<std::string>{"unshare", "--pid", "--fork", "--kill-child", "setpriv",
                                 "--reuid=" + id, "--regid=" + id, "--clear-groups", "sleep",
                                 "600"},
        dir_.file(name + ".out"), dir_.file(name + ".err"));
    std::string children = "/proc/" + std::to_string(pod.launcher->pid()) + "/task/" +
                           std::to_string(pod.launcher->pid()) + "/children";
    bool up = fabric::testing::wait_for(
        [&] {
          std::string child = first_line(children);
          if (child.empty()) return false;
          pod.pid = std::stoi(child);
          return first_line("/proc/" + std::to_string(pod.pid) + "/comm") == "sleep";
        },
        std::chrono::seconds(10));
    EXPECT_TRUE(up) << name << ": " << pod.launcher->stderr_text();
    pod.cgroup = kPodCgroups + "/pod" + uid + "/" + name;
    fs::create_directories(pod.cgroup);
    std::ofstream(pod.cgroup + "/cgroup.procs") << pod.pid << "\n";
    return pod;
  }

  // The profile the plugin in `pod`'s process would write, naming that process as it sees
  // itself: pid 1 of its namespace.
  ProcessProfile profile_of(const TrainingPod& pod, uint64_t ops) {
    std::string proc = "/proc/" + std::to_string(pod.pid);
    ProcessProfile p;
    p.pid =
        nccl_profiler::parse_status_nspid(fabric::testing::read_text(proc + "/status")).value_or(0);
    p.pid_ns =
        nccl_profiler::parse_pid_ns_link(fs::read_symlink(proc + "/ns/pid").string()).value_or(0);
    p.start_ticks =
        nccl_profiler::parse_stat_start_ticks(fabric::testing::read_text(proc + "/stat"))
            .value_or(0);
    p.interval_ms = 10000;
    p.sequence = 1;
    p.abi = "ncclProfiler_v5";
    CommProfile comm{kJobComm, 2, 0, 1, {}, {}};
    comm.cells.push_back(
        {Collective::kAllReduce, 1 << 20, ops, ops << 20, ops, ops << 20, ops * 100000, 0, 0});
    p.comms.push_back(comm);
    return p;
  }

  // Writes `profile` under `name` as `user` does, a temporary file renamed into place;
  // whether the kernel let it.
  bool write_as(uint32_t user, const std::string& name, const ProcessProfile& profile) {
    std::string id = std::to_string(user);
    auto r = run_subprocess(
        {"setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups", "sh", "-c",
         "t=\"$1.tmp.$$\"; cat > \"$t\" && mv \"$t\" \"$1\" || { rm -f \"$t\"; exit 1; }", "sh",
         dir_.file("nccl/" + name)},
        {.stdin_text = nccl_profiler::render_profile(profile),
         .environment = std::nullopt,
         .timeout = std::chrono::seconds(10)});
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() && r->exit_status == 0;
  }

  static std::string file_name(const ProcessProfile& p) {
    return nccl_profiler::profile_file_name(p.pid, p.pid_ns, p.start_ticks);
  }

  nccl_profiler::ReaderOptions options() {
    nccl_profiler::ReaderOptions o;
    o.dir = dir_.file("nccl");
    o.proc_root = "/proc";
    o.cni_state_dir = "";
    o.pod_log_dir = dir_.file("pods");
    return o;
  }

  static std::optional<double> operations(const testing::Collected& c, const std::string& pod) {
    return testing::value(c.families, "fabric_nccl_operations_total",
                          {{"collective", "all_reduce"},
                           {"comm", "5eed0000"},
                           {"nranks", "2"},
                           {"size_bucket", "1048576"},
                           {"namespace", "training"},
                           {"pod", pod}});
  }

  fabric::testing::TempDir dir_;
  std::deque<TrainingPod> pods_;
};

TEST_F(NcclAttributionNetns, EachPodIsNamedAndNeitherChangesTheOthersSeries) {
  TrainingPod& a = start_pod("trainer-a", "0b6e1a52-1c1d-4e0a-9a51-7a1d2f0c3b01", 41001);
  TrainingPod& b = start_pod("trainer-b", "0b6e1a52-1c1d-4e0a-9a51-7a1d2f0c3b02", 41002);
  ASSERT_GT(a.pid, 0);
  ASSERT_GT(b.pid, 0);
  ProcessProfile pa = profile_of(a, 100), pb = profile_of(b, 300);
  ASSERT_EQ(pa.pid, 1) << "pid 1 of its own namespace";
  ASSERT_NE(pa.pid_ns, pb.pid_ns) << "each pod has its own pid namespace";
  ASSERT_TRUE(write_as(a.user, file_name(pa), pa));
  ASSERT_TRUE(write_as(b.user, file_name(pb), pb));

  NcclCollector collector(options());
  testing::Collected c = testing::collect(collector);
  ASSERT_TRUE(c.ok) << (c.messages.empty() ? "" : c.messages[0]);
  EXPECT_EQ(operations(c, "trainer-a"), 100) << "pod A's rank, named from its cgroup";
  EXPECT_EQ(operations(c, "trainer-b"), 300);
  EXPECT_EQ(testing::value(c.families, "fabric_nccl_processes", {{"state", "running"}}), 2);

  // In a sticky directory pod A cannot replace pod B's file at all.
  EXPECT_FALSE(write_as(a.user, file_name(pb), profile_of(b, 1000000)));
  // Where it can (a directory without the sticky bit), the file is not owned by B's
  // process: not believed, and B's series keeps what B wrote.
  ::chmod(dir_.file("nccl").c_str(), 0777);
  ASSERT_TRUE(write_as(a.user, file_name(pb), profile_of(b, 1000000)));
  c = testing::collect(collector);
  EXPECT_EQ(operations(c, "trainer-b"), 300);
  EXPECT_EQ(operations(c, "trainer-a"), 100);
  EXPECT_EQ(testing::value(c.families, "fabric_nccl_files_rejected_total",
                           {{"reason", "owner_mismatch"}}),
            1);
  // B writes again: its own new counters count.
  ASSERT_TRUE(write_as(b.user, file_name(pb), profile_of(b, 350)));
  c = testing::collect(collector);
  EXPECT_EQ(operations(c, "trainer-b"), 350);
}

} // namespace
} // namespace fabric::exporters
