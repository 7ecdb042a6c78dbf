#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "common/rdma_sysfs.h"
#include "common/sysfs.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

// A copy of rxe0's sysfs table on veth `va`, with a pod macvlan mv0 at 10.77.0.5.
SysfsReader fixture() {
  return SysfsReader(FABRIC_TEST_DATA_DIR "/sysfs/");
}

TEST(Sysfs, ReadsAttributesWithoutTrailingNewline) {
  SysfsReader sysfs = fixture();
  EXPECT_EQ(*sysfs.read("class/infiniband/rxe0/ports/1/state"), "4: ACTIVE");
  EXPECT_EQ(sysfs.root(), FABRIC_TEST_DATA_DIR "/sysfs");
}

TEST(Sysfs, MissingFilesAreNotFoundOrNullopt) {
  SysfsReader sysfs = fixture();
  auto missing = sysfs.read("class/infiniband/mlx5_0/ports/1/state");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("mlx5_0"), std::string::npos);
  auto optional = sysfs.read_optional("class/infiniband/mlx5_0/ports/1/state");
  ASSERT_TRUE(optional.ok());
  EXPECT_FALSE(optional->has_value());
  EXPECT_TRUE(sysfs.list("class/net")->empty());
}

TEST(Sysfs, ReadU64RejectsText) {
  SysfsReader sysfs = fixture();
  auto r = sysfs.read_u64("class/infiniband/rxe0/ports/1/link_layer");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDecode);
}

// A root with sysfs-style relative links, one absolute link and one dangling link.
class SysfsLinks : public ::testing::Test {
protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("fabric-sysfs-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    const fs::path nic = root_ / "devices/pci0000:00/0000:00:01.0/0000:01:00.0";
    fs::create_directories(nic / "infiniband/mlx5_0");
    fs::create_directories(root_ / "class/infiniband");
    fs::create_symlink("../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/infiniband/mlx5_0",
                       root_ / "class/infiniband/mlx5_0");
    fs::create_symlink("../../../0000:01:00.0", nic / "infiniband/mlx5_0/device");
    fs::create_symlink("/tmp", root_ / "class/infiniband/elsewhere");
    fs::create_symlink("../../devices/gone", root_ / "class/infiniband/dangling");
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
};

TEST_F(SysfsLinks, ResolveFollowsEveryLinkAndAnswersRelativeToTheRoot) {
  SysfsReader sysfs(root_.string() + "/");
  auto device = sysfs.resolve("class/infiniband/mlx5_0/device");
  ASSERT_TRUE(device.ok()) << device.error().message();
  EXPECT_EQ(*device, "devices/pci0000:00/0000:00:01.0/0000:01:00.0");
  EXPECT_EQ(*sysfs.resolve("class/infiniband/mlx5_0"),
            "devices/pci0000:00/0000:00:01.0/0000:01:00.0/infiniband/mlx5_0");
  EXPECT_EQ(*sysfs.resolve("devices"), "devices");
}

TEST_F(SysfsLinks, ResolveRefusesLinksOutOfTheRootAndReportsMissingTargets) {
  SysfsReader sysfs(root_.string());
  auto outside = sysfs.resolve("class/infiniband/elsewhere");
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(outside.error().message().find("leads outside"), std::string::npos)
      << outside.error().message();
  auto dangling = sysfs.resolve("class/infiniband/dangling");
  ASSERT_FALSE(dangling.ok());
  EXPECT_EQ(dangling.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(sysfs.resolve("class/net/eth9").error().code(), ErrorCode::kNotFound);
}

TEST(Sysfs, ResolveOnTheRealSysfs) {
  SysfsReader sysfs;
  auto bus = sysfs.resolve("bus/pci");
  ASSERT_TRUE(bus.ok()) << bus.error().message();
  EXPECT_EQ(*bus, "bus/pci");
}

TEST(RdmaSysfs, GidTableKeepsValidEntriesWithTypeNetdevAndIpv4) {
  auto table = rdma::read_sysfs_gid_table(fixture(), "rxe0", 1);
  ASSERT_TRUE(table.ok()) << table.error().message();
  ASSERT_EQ(table->size(), 3u); // index 3 is all zeros: unused
  const auto& link_local = (*table)[0];
  EXPECT_EQ(link_local.gid, "fe80::b8a5:36ff:fe5c:4d01");
  EXPECT_FALSE(link_local.ipv4.has_value());
  const auto& host = (*table)[1];
  EXPECT_EQ(host.index, 1u);
  EXPECT_EQ(host.gid, "::ffff:10.77.0.1");
  EXPECT_EQ(host.type, rdma::GidType::kRoceV2);
  EXPECT_EQ(host.netdev, "va");
  EXPECT_EQ(host.ipv4, "10.77.0.1");
  const auto& pod = (*table)[2];
  EXPECT_EQ(pod.netdev, "mv0");
  EXPECT_EQ(pod.ipv4, "10.77.0.5");
}

TEST(RdmaSysfs, MissingPortIsNotFound) {
  auto table = rdma::read_sysfs_gid_table(fixture(), "rxe0", 2);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(*rdma::list_sysfs_devices(fixture()), std::vector<std::string>{"rxe0"});
}

TEST(RdmaSysfs, GidTypesUseTheKernelsWords) {
  EXPECT_EQ(rdma::parse_sysfs_gid_type("RoCE v2"), rdma::GidType::kRoceV2);
  EXPECT_EQ(rdma::parse_sysfs_gid_type("IB/RoCE v1"), rdma::GidType::kRoceV1);
  EXPECT_EQ(rdma::parse_sysfs_gid_type("bogus"), rdma::GidType::kUnknown);
}

} // namespace
} // namespace fabric
