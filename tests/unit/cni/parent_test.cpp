// Resolving the RoCE parent from whichever name the configuration gives, against a sysfs
// fixture: two mlx5-like PCI functions (ens1f0/mlx5_0, ens1f1/mlx5_1), an NVMe function
// without a netdev, rxe0 on the virtio NIC eth0 (found through rxe's `parent`), a veth
// and a pod macvlan mv0 whose GIDs sit on rxe0.
#include <gtest/gtest.h>

#include "cni/parent.h"

namespace fabric::cni {
namespace {

SysfsReader fixture() {
  return SysfsReader(FABRIC_TEST_DATA_DIR "/cni/sysfs");
}

TEST(CniParent, PciBackedNetdevFindsItsRdmaDeviceAndPciFunction) {
  auto pd = parent_from_netdev(fixture(), "ens1f1");
  ASSERT_TRUE(pd.ok()) << pd.error().message();
  EXPECT_EQ(pd->netdev, "ens1f1");
  EXPECT_EQ(pd->rdma_device, "mlx5_1");
  EXPECT_EQ(pd->pci_address, "0000:3b:00.1");
  EXPECT_EQ(pd->rdma_port, 1u);
}

TEST(CniParent, RdmaDeviceFindsItsNetdevThroughThePciFunction) {
  auto pd = parent_from_rdma_device(fixture(), "mlx5_0");
  ASSERT_TRUE(pd.ok()) << pd.error().message();
  EXPECT_EQ(pd->netdev, "ens1f0");
  EXPECT_EQ(pd->rdma_device, "mlx5_0");
  EXPECT_EQ(pd->pci_address, "0000:3b:00.0");
}

TEST(CniParent, PciAddressInBothFormsResolvesTheSameDevice) {
  for (const char* pci : {"0000:3b:00.0", "3b:00.0", "0000:3B:00.0"}) {
    auto pd = parent_from_pci_address(fixture(), pci);
    ASSERT_TRUE(pd.ok()) << pci << ": " << pd.error().message();
    EXPECT_EQ(pd->netdev, "ens1f0") << pci;
    EXPECT_EQ(pd->rdma_device, "mlx5_0") << pci;
    EXPECT_EQ(pd->pci_address, "0000:3b:00.0") << pci;
  }
}

// VMD puts devices in PCI domains above 0xffff; the kernel names them with five digits.
// The address that passes config validation (config_test) is found here too.
TEST(CniParent, VmdDomainAddressesResolve) {
  for (const char* pci : {"10000:01:00.0", "010000:01:00.0"}) {
    auto pd = parent_from_pci_address(fixture(), pci);
    ASSERT_TRUE(pd.ok()) << pci << ": " << pd.error().message();
    EXPECT_EQ(pd->netdev, "ens9f0") << pci;
    EXPECT_EQ(pd->pci_address, "10000:01:00.0") << pci;
    EXPECT_TRUE(pd->rdma_device.empty());
  }
}

TEST(CniParent, SoftRoceIsFoundThroughItsParentFileBothWays) {
  auto from_netdev = parent_from_netdev(fixture(), "eth0");
  ASSERT_TRUE(from_netdev.ok()) << from_netdev.error().message();
  EXPECT_EQ(from_netdev->rdma_device, "rxe0");
  // eth0 is a virtio NIC: its device link is not a PCI function, and rxe has none.
  EXPECT_EQ(from_netdev->pci_address, "");

  auto from_rdma = parent_from_rdma_device(fixture(), "rxe0");
  ASSERT_TRUE(from_rdma.ok()) << from_rdma.error().message();
  EXPECT_EQ(from_rdma->netdev, "eth0");
  EXPECT_EQ(from_rdma->pci_address, "");
  EXPECT_EQ(from_rdma->rdma_port, 1u);
}

TEST(CniParent, NetdevWithoutRdmaIsNotAnError) {
  auto veth = parent_from_netdev(fixture(), "veth0");
  ASSERT_TRUE(veth.ok()) << veth.error().message();
  EXPECT_EQ(veth->netdev, "veth0");
  EXPECT_EQ(veth->rdma_device, "");
  EXPECT_EQ(veth->pci_address, "");
}

// mv0 has GIDs on rxe0 (index 2) but is not rxe0's own netdev: only GID 0 says that.
TEST(CniParent, AMacvlansGidsDoNotMakeItAParent) {
  auto pd = parent_from_netdev(fixture(), "mv0");
  ASSERT_TRUE(pd.ok()) << pd.error().message();
  EXPECT_EQ(pd->rdma_device, "");
}

TEST(CniParent, UnknownNamesAreNotFoundAndNamed) {
  auto netdev = parent_from_netdev(fixture(), "ens9");
  ASSERT_FALSE(netdev.ok());
  EXPECT_EQ(netdev.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(netdev.error().message().find("ens9"), std::string::npos);

  auto rdma = parent_from_rdma_device(fixture(), "mlx5_7");
  ASSERT_FALSE(rdma.ok());
  EXPECT_EQ(rdma.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(rdma.error().message().find("mlx5_7"), std::string::npos);
  // The error lists what is there, so the user sees the right name at once.
  EXPECT_NE(rdma.error().message().find("mlx5_0, mlx5_1, rxe0"), std::string::npos);

  auto pci = parent_from_pci_address(fixture(), "0000:af:00.0");
  ASSERT_FALSE(pci.ok());
  EXPECT_EQ(pci.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(pci.error().message().find("0000:af:00.0"), std::string::npos);
}

TEST(CniParent, PciFunctionWithoutNetdevIsNotFound) {
  auto pd = parent_from_pci_address(fixture(), "0000:5e:00.0");
  ASSERT_FALSE(pd.ok());
  EXPECT_EQ(pd.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(pd.error().message().find("0000:5e:00.0: has no network interface"), std::string::npos)
      << pd.error().message();
}

TEST(CniParent, MalformedPciAddressesAreRefused) {
  for (const char* bad : {"3b:00", "0000:3b:00:0", "0000:3g:00.0", "0000:3b:20.0", "0000:3b:00.8",
                          "000:3b:00.0", "123456789:3b:00.0", "", "../../x"}) {
    auto pd = parent_from_pci_address(fixture(), bad);
    ASSERT_FALSE(pd.ok()) << bad;
    EXPECT_EQ(pd.error().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(pd.error().message().find("DDDD:BB:DD.F"), std::string::npos);
  }
}

TEST(CniParent, NamesThatWouldLeaveSysfsAreRefused) {
  for (const char* bad : {"..", "../net", "a/b", ""}) {
    auto netdev = parent_from_netdev(fixture(), bad);
    ASSERT_FALSE(netdev.ok()) << bad;
    EXPECT_EQ(netdev.error().code(), ErrorCode::kInvalidArgument) << bad;
    auto rdma = parent_from_rdma_device(fixture(), bad);
    ASSERT_FALSE(rdma.ok()) << bad;
    EXPECT_EQ(rdma.error().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(CniParent, PortStateIsTheKernelsWord) {
  EXPECT_EQ(*rdma_port_state(fixture(), "mlx5_0", 1), "ACTIVE");
  EXPECT_EQ(*rdma_port_state(fixture(), "mlx5_1", 1), "DOWN");
  auto missing = rdma_port_state(fixture(), "mlx5_0", 2);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("mlx5_0/2"), std::string::npos);
}

} // namespace
} // namespace fabric::cni
