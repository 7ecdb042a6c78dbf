// Waiting for a pod's RoCE v2 GID, against the sysfs fixture of tests/data/cni/sysfs:
// mlx5_0 holds 10.0.0.5 (v1+v2 on ens1f0), 10.0.0.7 (v1 only, on pod1), 10.0.0.8 (v2 on
// net1) and 10.0.0.9 (v1+v2 on pod3); rxe0 holds 10.77.0.11 on eth0 and 10.77.0.200 on
// the macvlan mv0, with slots 3 and 4 unused.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "cni/gid_wait.h"

namespace fabric::cni {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

SysfsReader fixture() {
  return SysfsReader(FABRIC_TEST_DATA_DIR "/cni/sysfs");
}

// The fixture copied to a private folder that a test may write to, removed afterwards.
class FixtureCopy {
public:
  FixtureCopy() {
    root_ = fs::temp_directory_path() /
            ("fabric-gid-wait-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    fs::copy(FABRIC_TEST_DATA_DIR "/cni/sysfs", root_,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  ~FixtureCopy() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  SysfsReader reader() const { return SysfsReader(root_.string()); }

  // Writes one attribute as sysfs shows it, atomically, so that a reader never sees half.
  void write(const std::string& relative, const std::string& text) const {
    fs::path target = root_ / relative;
    fs::path tmp = target;
    tmp += ".tmp";
    std::ofstream(tmp) << text << "\n";
    fs::rename(tmp, target);
  }

private:
  static inline std::atomic<int> counter_{0};
  fs::path root_;
};

TEST(CniGidWait, FindsThePodsGidOnItsMacvlan) {
  auto index = wait_for_roce_v2_gid(fixture(), "mlx5_0", 1, "10.0.0.9", "pod3", milliseconds(0));
  ASSERT_TRUE(index.ok()) << index.error().message();
  // Index 6 is the same address as RoCE v1: only the v2 entry counts.
  EXPECT_EQ(*index, 7u);

  auto rxe = wait_for_roce_v2_gid(fixture(), "rxe0", 1, "10.77.0.200", "mv0", milliseconds(0));
  ASSERT_TRUE(rxe.ok()) << rxe.error().message();
  EXPECT_EQ(*rxe, 2u);
}

TEST(CniGidWait, GidOnAnotherNetdevTimesOutSayingWhereItIs) {
  auto r = wait_for_roce_v2_gid(fixture(), "mlx5_0", 1, "10.0.0.8", "pod2", milliseconds(30));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kTimeout);
  const std::string msg = r.error().message();
  EXPECT_NE(msg.find("on another netdev than pod2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 5 (RoCE v2, netdev net1)"), std::string::npos) << msg;
}

TEST(CniGidWait, RoceV1OnlyGidTimesOutSayingSo) {
  auto r = wait_for_roce_v2_gid(fixture(), "mlx5_0", 1, "10.0.0.7", "pod1", milliseconds(30));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kTimeout);
  const std::string msg = r.error().message();
  EXPECT_NE(msg.find("only as RoCE v1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 4 (RoCE v1, netdev pod1)"), std::string::npos) << msg;
}

TEST(CniGidWait, MissingGidTimesOutNamingTheAddressAndDevice) {
  auto r = wait_for_roce_v2_gid(fixture(), "rxe0", 1, "10.77.0.201", "mv1", milliseconds(30));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kTimeout);
  const std::string msg = r.error().message();
  EXPECT_NE(msg.find("rxe0 port 1 has no GID ::ffff:10.77.0.201"), std::string::npos) << msg;
  EXPECT_NE(msg.find("after 30 ms"), std::string::npos) << msg;
}

TEST(CniGidWait, MissingDeviceOrPortFailsAtOnce) {
  // A long timeout: a missing device must not be waited for.
  auto device =
      wait_for_roce_v2_gid(fixture(), "mlx5_9", 1, "10.0.0.9", "pod3", milliseconds(60000));
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(device.error().message().find("mlx5_9"), std::string::npos);
  auto port = wait_for_roce_v2_gid(fixture(), "mlx5_0", 2, "10.0.0.9", "pod3", milliseconds(60000));
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.error().code(), ErrorCode::kNotFound);
}

TEST(CniGidWait, RefusesAnythingButAnIpv4Address) {
  for (const char* bad : {"fd00::9", "10.0.0", "10.0.0.9/24", ""}) {
    auto r = wait_for_roce_v2_gid(fixture(), "mlx5_0", 1, bad, "pod3", milliseconds(0));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

// The kernel fills a slot after the address appears: first the GID, then its type and
// netdev. A wait that starts before must keep polling through the partial states and
// return the index once the entry is complete.
TEST(CniGidWait, ReturnsTheIndexOnceTheKernelFillsTheSlot) {
  FixtureCopy copy;
  const std::string port = "class/infiniband/rxe0/ports/1/";
  std::thread kernel([&] {
    std::this_thread::sleep_for(milliseconds(50));
    copy.write(port + "gid_attrs/ndevs/4", "mv1");
    copy.write(port + "gid_attrs/types/4", "RoCE v2");
    copy.write(port + "gids/4", "0000:0000:0000:0000:0000:ffff:0a4d:00c9");
  });
  auto index =
      wait_for_roce_v2_gid(copy.reader(), "rxe0", 1, "10.77.0.201", "mv1", milliseconds(20000));
  kernel.join();
  ASSERT_TRUE(index.ok()) << index.error().message();
  EXPECT_EQ(*index, 4u);
}

// While the slot has the GID but a netdev the pod does not own yet (a rename in progress),
// the wait goes on; it succeeds once the netdev is right.
TEST(CniGidWait, KeepsWaitingWhileTheGidIsOnAnotherNetdev) {
  FixtureCopy copy;
  const std::string port = "class/infiniband/rxe0/ports/1/";
  copy.write(port + "gid_attrs/types/3", "RoCE v2");
  copy.write(port + "gid_attrs/ndevs/3", "tmp0a1b2c");
  copy.write(port + "gids/3", "0000:0000:0000:0000:0000:ffff:0a4d:00ca");
  std::thread rename([&] {
    std::this_thread::sleep_for(milliseconds(50));
    copy.write(port + "gid_attrs/ndevs/3", "net1");
  });
  auto index =
      wait_for_roce_v2_gid(copy.reader(), "rxe0", 1, "10.77.0.202", "net1", milliseconds(20000));
  rename.join();
  ASSERT_TRUE(index.ok()) << index.error().message();
  EXPECT_EQ(*index, 3u);
}

} // namespace
} // namespace fabric::cni
