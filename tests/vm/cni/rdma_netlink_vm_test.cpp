// The CNI plugin's kernel layer on a real rdma_rxe device, inside the soft-RoCE lab VM
// (scripts/lab.sh sets FABRIC_LAB_*): RDMA netlink (netns mode, device index, moving a
// device between namespaces) and, in shared mode, the whole macvlan path up to the pod's
// RoCE v2 GID appearing in rxe0's table.
//
// The kernel changes the RDMA netns mode only while no namespace but the initial one
// exists, and namespaces are destroyed asynchronously after their last reference goes;
// mode changes therefore poll (bounded) until the kernel accepts them.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "cni/gid_wait.h"
#include "cni/link_ops.h"
#include "cni/sysctl.h"
#include "common/netns.h"
#include "common/rdma_netlink.h"
#include "common/rdma_sysfs.h"
#include "common/subprocess.h"
#include "tests/netns/test_network.h"

namespace fabric {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Sets the mode, retrying while namespaces left by an earlier step are still being torn
// down (kTryAgain), for at most `limit`.
Result<void> set_mode_when_possible(rdma::NetnsMode mode, seconds limit = seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto set = rdma::set_netns_mode(mode);
    if (set.ok() || set.error().code() != ErrorCode::kTryAgain ||
        std::chrono::steady_clock::now() >= deadline) {
      return set;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
}

// Puts the kernel back into shared mode however a test ends, so later tests start from
// the default.
struct SharedModeAtExit {
  ~SharedModeAtExit() {
    auto restored = set_mode_when_possible(rdma::NetnsMode::kShared);
    if (!restored.ok()) ADD_FAILURE() << "restoring shared mode: " << restored.error().message();
  }
};

Result<std::string> run_ok(const std::vector<std::string>& argv) {
  return testing::run_checked(argv);
}

class CniKernelVm : public ::testing::Test {
protected:
  void SetUp() override {
    const char* dev = std::getenv("FABRIC_LAB_RDMA_DEV");
    const char* netdev = std::getenv("FABRIC_LAB_NETDEV");
    if (dev == nullptr || netdev == nullptr) {
      GTEST_SKIP() << "not inside the soft-RoCE lab (run through scripts/lab.sh)";
    }
    rdma_dev_ = dev;
    netdev_ = netdev;
  }

  std::string rdma_dev_;
  std::string netdev_;
};

TEST_F(CniKernelVm, NetnsModeIsSharedByDefaultAsRdmaToolSays) {
  auto mode = rdma::get_netns_mode();
  ASSERT_TRUE(mode.ok()) << mode.error().message();
  EXPECT_EQ(*mode, rdma::NetnsMode::kShared);
  auto shown = run_ok({"rdma", "system", "show"});
  ASSERT_TRUE(shown.ok()) << shown.error().message();
  EXPECT_TRUE(contains(*shown, "netns shared")) << *shown;
}

TEST_F(CniKernelVm, DeviceIndexIsTheOneRdmaToolShows) {
  auto devices = rdma::list_devices();
  ASSERT_TRUE(devices.ok()) << devices.error().message();
  EXPECT_EQ(*devices, std::vector<std::string>{rdma_dev_});
  auto index = rdma::device_index(rdma_dev_);
  ASSERT_TRUE(index.ok()) << index.error().message();
  // `rdma dev show` lines start with "<index>: <name>:".
  auto shown = run_ok({"rdma", "dev", "show"});
  ASSERT_TRUE(shown.ok()) << shown.error().message();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*shown, m, std::regex("(\\d+): " + rdma_dev_ + ":"))) << *shown;
  EXPECT_EQ(*index, std::stoul(m[1]));
}

TEST_F(CniKernelVm, UnknownDeviceIsNotFoundListingWhatIsVisible) {
  auto index = rdma::device_index("mlx5_9");
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(index.error().message(), "mlx5_9")) << index.error().message();
  EXPECT_TRUE(contains(index.error().message(), "sees: " + rdma_dev_)) << index.error().message();
}

TEST_F(CniKernelVm, ExclusiveModeCanBeSetAndReset) {
  SharedModeAtExit restore;
  auto set = set_mode_when_possible(rdma::NetnsMode::kExclusive);
  ASSERT_TRUE(set.ok()) << set.error().message();
  EXPECT_EQ(*rdma::get_netns_mode(), rdma::NetnsMode::kExclusive);
  EXPECT_TRUE(contains(*run_ok({"rdma", "system", "show"}), "netns exclusive"));

  auto back = set_mode_when_possible(rdma::NetnsMode::kShared);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*rdma::get_netns_mode(), rdma::NetnsMode::kShared);
  EXPECT_TRUE(contains(*run_ok({"rdma", "system", "show"}), "netns shared"));
}

TEST_F(CniKernelVm, ModeChangeWhileANamespaceExistsIsRefusedClearly) {
  SharedModeAtExit restore;
  testing::TestNetwork net;
  net.add_namespace("busy");
  auto set = rdma::set_netns_mode(rdma::NetnsMode::kExclusive);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().code(), ErrorCode::kTryAgain);
  EXPECT_TRUE(contains(set.error().message(), "network namespaces other than the initial one"))
      << set.error().message();
  EXPECT_EQ(*rdma::get_netns_mode(), rdma::NetnsMode::kShared);
}

TEST_F(CniKernelVm, MoveInSharedModeIsRefusedSayingTheModeIsShared) {
  testing::TestNetwork net;
  auto pod = netns::open(net.add_namespace("pod"));
  ASSERT_TRUE(pod.ok()) << pod.error().message();
  auto moved = rdma::move_device_to_netns(rdma_dev_, pod->get());
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(moved.error().sys_errno(), EOPNOTSUPP);
  EXPECT_TRUE(contains(moved.error().message(), "RDMA netns mode is shared"))
      << moved.error().message();
  EXPECT_TRUE(contains(moved.error().hint(), "exclusive"));
  EXPECT_TRUE(rdma::device_index(rdma_dev_).ok());
}

// Exclusive mode's RDMA half. rxe on the lab's kernel cannot be disassociated from user
// contexts, so the kernel may refuse; then the error must say it is the driver, not the
// mode. Where it succeeds, the device must be visible in the pod only, and come back.
TEST_F(CniKernelVm, MoveRxeIntoAPodInExclusiveModeMovesOrSaysTheDriverCannot) {
  SharedModeAtExit restore;
  {
    auto set = set_mode_when_possible(rdma::NetnsMode::kExclusive);
    ASSERT_TRUE(set.ok()) << set.error().message();
    testing::TestNetwork net;
    const std::string pod_path = net.add_namespace("pod");
    auto pod = netns::open(pod_path);
    ASSERT_TRUE(pod.ok()) << pod.error().message();
    auto host = netns::open_current();
    ASSERT_TRUE(host.ok());

    auto moved = rdma::move_device_to_netns(rdma_dev_, pod->get());
    if (moved.ok()) {
      auto in_pod = netns::run_in(pod_path, [] { return rdma::list_devices(); });
      ASSERT_TRUE(in_pod.ok()) << in_pod.error().message();
      EXPECT_EQ(*in_pod, std::vector<std::string>{rdma_dev_});
      EXPECT_TRUE(rdma::list_devices()->empty());
      auto back = netns::run_in(pod_path,
                                [&] { return rdma::move_device_to_netns(rdma_dev_, host->get()); });
      ASSERT_TRUE(back.ok()) << back.error().message();
      EXPECT_TRUE(rdma::device_index(rdma_dev_).ok());
    } else {
      EXPECT_EQ(moved.error().code(), ErrorCode::kUnsupported) << moved.error().message();
      EXPECT_EQ(moved.error().sys_errno(), EOPNOTSUPP);
      EXPECT_TRUE(contains(moved.error().message(), "cannot change network namespace"))
          << moved.error().message();
      EXPECT_FALSE(contains(moved.error().message(), "mode is shared"));
      EXPECT_TRUE(rdma::device_index(rdma_dev_).ok());
    }
  } // the namespace goes; shared mode is restored once the kernel has released it
}

// Shared mode end to end, the way ADD does it: a macvlan on the RoCE netdev created
// inside a pod, renamed, addressed and brought up there; the kernel then publishes a
// RoCE v2 GID for the pod's address on rxe0, naming the pod's interface.
TEST_F(CniKernelVm, PodMacvlanGetsItsRoceV2GidOnRxe0) {
  ASSERT_EQ(*rdma::get_netns_mode(), rdma::NetnsMode::kShared);
  testing::TestNetwork net;
  const std::string pod_path = net.add_namespace("pod");
  auto pod = netns::open(pod_path);
  ASSERT_TRUE(pod.ok()) << pod.error().message();

  auto created = cni::create_macvlan(netdev_, pod->get(), "tmp5e6f7a", cni::MacvlanMode::kBridge,
                                     std::nullopt);
  ASSERT_TRUE(created.ok()) << created.error().message();
  auto configured = netns::run_in(pod_path, []() -> Result<void> {
    FABRIC_TRY(cni::rename_link("tmp5e6f7a", "net1"));
    FABRIC_TRY(cni::write_sysctl("net/ipv4/conf/net1/arp_notify", "1"));
    FABRIC_TRY(cni::add_address("net1", "10.77.0.200/24"));
    return cni::set_link_up("net1", true);
  });
  ASSERT_TRUE(configured.ok()) << configured.error().message();

  SysfsReader sysfs;
  auto index =
      cni::wait_for_roce_v2_gid(sysfs, rdma_dev_, 1, "10.77.0.200", "net1", milliseconds(20000));
  ASSERT_TRUE(index.ok()) << index.error().message();
  const std::string slot = "class/infiniband/" + rdma_dev_ + "/ports/1/";
  const std::string i = std::to_string(*index);
  EXPECT_EQ(*sysfs.read(slot + "gids/" + i), "0000:0000:0000:0000:0000:ffff:0a4d:00c8");
  EXPECT_EQ(*sysfs.read(slot + "gid_attrs/types/" + i), "RoCE v2");
  EXPECT_EQ(*sysfs.read(slot + "gid_attrs/ndevs/" + i), "net1");

  // The same address on the host NIC's name does not satisfy the wait: it names where the
  // GID really is.
  auto wrong =
      cni::wait_for_roce_v2_gid(sysfs, rdma_dev_, 1, "10.77.0.200", netdev_, milliseconds(100));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code(), ErrorCode::kTimeout);
  EXPECT_TRUE(contains(wrong.error().message(), "netdev net1")) << wrong.error().message();

  // Deleting the pod's interface takes its GID with it.
  ASSERT_TRUE(netns::run_in(pod_path, [] { return cni::delete_link("net1"); }).ok());
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    auto table = rdma::read_sysfs_gid_table(sysfs, rdma_dev_, 1);
    ASSERT_TRUE(table.ok()) << table.error().message();
    gone = std::none_of(table->begin(), table->end(),
                        [](const rdma::GidEntry& e) { return e.ipv4 == "10.77.0.200"; });
    if (!gone) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(gone) << "the GID of 10.77.0.200 outlived net1";
}

} // namespace
} // namespace fabric
