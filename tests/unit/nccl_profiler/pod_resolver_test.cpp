// A process's pod: its UID from the kubelet's cgroup layouts, its name from fabric-cni's
// records or the kubelet's pod log directories.
#include <filesystem>

#include <gtest/gtest.h>

#include "cni/state.h"
#include "exporters/nccl_profiler/pod_resolver.h"
#include "test_support.h"

namespace fabric::nccl_profiler {
namespace {

constexpr const char* kUid = "6f1c2f0e-5a7b-4c2d-9e1f-0a1b2c3d4e5f";

std::string cgroup_fixture(const std::string& name) {
  return testing::read_text(std::string(FABRIC_TEST_DATA_DIR) + "/nccl_profiler/cgroup/" + name);
}

TEST(PodUid, EveryKubeletLayout) {
  for (const char* layout :
       {"v1-cgroupfs", "v1-systemd", "v2-cgroupfs-guaranteed", "v2-systemd-guaranteed",
        "v2-systemd-burstable", "v2-systemd-seen-from-a-cgroup-namespace"}) {
    std::string text = cgroup_fixture(layout);
    ASSERT_FALSE(text.empty()) << layout;
    EXPECT_EQ(pod_uid_from_cgroup(text), kUid) << layout;
  }
  // A static pod's UID is the kubelet's 32-digit hash of its manifest.
  EXPECT_EQ(pod_uid_from_cgroup(cgroup_fixture("v2-cgroupfs-static-pod")),
            "0f6a8a3e2b9c4d1e8f7a6b5c4d3e2f1a");
}

TEST(PodUid, NoneOutsideAPod) {
  EXPECT_EQ(pod_uid_from_cgroup(cgroup_fixture("v2-not-in-a-pod")), std::nullopt);
  EXPECT_EQ(pod_uid_from_cgroup(cgroup_fixture("v1-look-alikes")), std::nullopt);
  EXPECT_EQ(pod_uid_from_cgroup(""), std::nullopt);
  EXPECT_EQ(pod_uid_from_cgroup("garbage without colons\n"), std::nullopt);
  // Upper case, wrong separators, wrong length: not a UID the kubelet writes.
  EXPECT_EQ(pod_uid_from_cgroup("0::/kubepods/pod6F1C2F0E-5A7B-4C2D-9E1F-0A1B2C3D4E5F/x\n"),
            std::nullopt);
  EXPECT_EQ(pod_uid_from_cgroup("0::/kubepods/pod6f1c2f0e_5a7b_4c2d_9e1f_0a1b2c3d4e5f/x\n"),
            std::nullopt);
  EXPECT_EQ(pod_uid_from_cgroup("0::/kubepods/pod6f1c2f0e-5a7b/x\n"), std::nullopt);
}

TEST(PodUid, FromAProcessInProc) {
  testing::TempDir proc;
  testing::FakeProc fake(proc.path(), 1);
  fake.add(42, 1, 42, 100, cgroup_fixture("v2-systemd-burstable"));
  SysfsReader reader(proc.path());
  EXPECT_EQ(pod_uid_of_process(reader, 42), kUid);
  EXPECT_EQ(pod_uid_of_process(reader, 43), std::nullopt) << "gone";
}

class PodDirectoryTest : public ::testing::Test {
protected:
  void add_attachment(const std::string& container, const std::string& ns, const std::string& name,
                      const std::string& uid) {
    cni::AttachmentRecord r;
    r.network = "roce";
    r.container_id = container;
    r.ifname = "net1";
    r.netns = "/var/run/netns/x";
    r.pod_namespace = ns;
    r.pod_name = name;
    r.pod_uid = uid;
    r.cni_version = "1.0.0";
    r.parent_netdev = "ens1f0";
    r.netconf = "{}";
    ASSERT_TRUE(cni::StateStore(state_.path()).save(r).ok());
  }
  void add_pod_logs(const std::string& entry) {
    std::filesystem::create_directories(logs_.file(entry));
  }

  testing::TempDir state_;
  testing::TempDir logs_;
};

TEST_F(PodDirectoryTest, NamesFromFabricCniRecords) {
  add_attachment("c1", "training", "trainer-0", kUid);
  PodDirectory pods(state_.path(), "");
  EXPECT_EQ(pods.find(kUid), (PodRef{"training", "trainer-0"}));
  EXPECT_EQ(pods.find("00000000-0000-0000-0000-000000000000"), std::nullopt);
}

TEST_F(PodDirectoryTest, NamesFromThePodLogDirectories) {
  add_pod_logs(std::string("ml-team_llama-worker-3_") + kUid);
  add_pod_logs("kube-system_static-etcd.node-1_0f6a8a3e2b9c4d1e8f7a6b5c4d3e2f1a");
  add_pod_logs("not-a-pod-directory");
  add_pod_logs("Bad_Name_6f1c2f0e-5a7b-4c2d-9e1f-0a1b2c3d4e50");
  PodDirectory pods("", logs_.path());
  EXPECT_EQ(pods.find(kUid), (PodRef{"ml-team", "llama-worker-3"}));
  EXPECT_EQ(pods.find("0f6a8a3e2b9c4d1e8f7a6b5c4d3e2f1a"),
            (PodRef{"kube-system", "static-etcd.node-1"}));
  EXPECT_EQ(pods.find("6f1c2f0e-5a7b-4c2d-9e1f-0a1b2c3d4e50"), std::nullopt);
}

TEST_F(PodDirectoryTest, FabricCniFirstThenLogsAndNewPodsOncePerRead) {
  add_attachment("c1", "training", "trainer-0", kUid);
  add_pod_logs(std::string("other_name_") + kUid);
  PodDirectory pods(state_.path(), logs_.path());
  pods.begin_read();
  EXPECT_EQ(pods.find(kUid), (PodRef{"training", "trainer-0"}));
  const std::string later = "11111111-2222-3333-4444-555555555555";
  EXPECT_EQ(pods.find(later), std::nullopt);
  add_pod_logs("training_trainer-1_" + later);
  EXPECT_EQ(pods.find(later), std::nullopt) << "the directories are read once per read";
  pods.begin_read();
  EXPECT_EQ(pods.find(later), (PodRef{"training", "trainer-1"}));
}

TEST_F(PodDirectoryTest, MissingDirectoriesNameNothing) {
  PodDirectory pods(state_.file("absent"), logs_.file("absent"));
  EXPECT_EQ(pods.find(kUid), std::nullopt);
}

} // namespace
} // namespace fabric::nccl_profiler
