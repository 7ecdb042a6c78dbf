// Line-rate context: each rank's NIC speed from sysfs fixtures, and the run's ceiling.
#include <gtest/gtest.h>

#include "nccltest/line_rate.h"

namespace fabric::nccltest {
namespace {

SysfsReader tree(const char* name) {
  return SysfsReader(std::string(FABRIC_TEST_DATA_DIR) + "/nccltest/" + name);
}

const std::string kRoute = "Iface\tDestination\tGateway\tFlags\n"
                           "eth0\t0000A8C0\t00000000\t0001\n"
                           "eth0\t00000000\t0100A8C0\t0003\n";

TEST(LineRate, PortRatesParse) {
  EXPECT_EQ(parse_port_rate("100 Gb/sec (4X EDR)"), 100.0);
  EXPECT_EQ(parse_port_rate("2.5 Gb/sec (1X SDR)"), 2.5);
  EXPECT_EQ(parse_port_rate("400 Gb/sec (4X NDR)\n"), 400.0);
  EXPECT_FALSE(parse_port_rate("junk").has_value());
  EXPECT_FALSE(parse_port_rate("0 Gb/sec").has_value());
}

TEST(LineRate, ActiveRdmaPortsByLocalRank) {
  NicChoice choice;
  auto first = detect_nic(tree("sysfs-rdma"), choice, kRoute);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->name, "mlx5_0/1");
  EXPECT_EQ((*first)->source, "RDMA port rate");
  EXPECT_EQ((*first)->gbps, 100.0);
  choice.local_rank = 1; // mlx5_1's port is down: the second active port is mlx5_2's
  EXPECT_EQ((*detect_nic(tree("sysfs-rdma"), choice, kRoute))->name, "mlx5_2/1");
  choice.local_rank = 2; // more ranks than active NICs: they share
  EXPECT_EQ((*detect_nic(tree("sysfs-rdma"), choice, kRoute))->name, "mlx5_0/1");
}

TEST(LineRate, NcclIbHcaAndExplicitNicWin) {
  NicChoice choice;
  choice.ib_hca = "=mlx5_2:1";
  EXPECT_EQ((*detect_nic(tree("sysfs-rdma"), choice, kRoute))->name, "mlx5_2/1");
  choice.ib_hca = "^mlx5_0"; // every device but those listed
  EXPECT_EQ((*detect_nic(tree("sysfs-rdma"), choice, kRoute))->name, "mlx5_2/1");
  choice.requested = "eth0";
  auto eth = detect_nic(tree("sysfs-rdma"), choice, kRoute);
  ASSERT_TRUE(eth.ok());
  EXPECT_EQ((*eth)->name, "eth0");
  EXPECT_EQ((*eth)->gbps, 25.0);
  choice.requested = "mlx5_1";
  EXPECT_FALSE(detect_nic(tree("sysfs-rdma"), choice, kRoute).ok()); // no active port
  choice.requested = "nope0";
  auto missing = detect_nic(tree("sysfs-rdma"), choice, kRoute);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(),
            "--nic: nope0: no RDMA device or netdev of that name on this host");
}

TEST(LineRate, WithoutRdmaTheDefaultRoutesNetdev) {
  auto nic = detect_nic(tree("sysfs-netdev"), {}, kRoute);
  ASSERT_TRUE(nic.ok());
  ASSERT_TRUE(nic->has_value());
  EXPECT_EQ((*nic)->name, "eth0");
  EXPECT_EQ((*nic)->source, "netdev speed");
  EXPECT_EQ((*nic)->gbps, 10.0);
  std::string veth_route = "Iface\tDestination\nveth0\t00000000\n";
  auto none = detect_nic(tree("sysfs-netdev"), {}, veth_route);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value()); // a speed of -1 is no speed
}

RankInfo rank(int r, const std::string& host, std::optional<NicInfo> nic) {
  RankInfo info;
  info.rank = r;
  info.host = host;
  info.nic = std::move(nic);
  return info;
}

TEST(LineRate, CeilingIsTheSlowestNodesNicBandwidth) {
  NicInfo a0{"mlx5_0/1", "RDMA port rate", 200}, a1{"mlx5_1/1", "RDMA port rate", 200};
  NicInfo b0{"mlx5_0/1", "RDMA port rate", 100};
  LineRate rate =
      line_rate_ceiling({rank(0, "a", a0), rank(1, "a", a1), rank(2, "b", b0), rank(3, "b", b0)});
  ASSERT_TRUE(rate.ceiling_gbytes.has_value());
  EXPECT_DOUBLE_EQ(*rate.ceiling_gbytes, 12.5);
  EXPECT_EQ(rate.basis, "slowest node b: 1 NIC, 100 Gb/s in all");
  LineRate one_node = line_rate_ceiling({rank(0, "a", a0), rank(1, "a", a1)});
  EXPECT_FALSE(one_node.ceiling_gbytes.has_value());
  EXPECT_EQ(one_node.basis, "all ranks on one node: no traffic crosses a NIC");
  LineRate unknown = line_rate_ceiling({rank(0, "a", a0), rank(1, "b", std::nullopt)});
  EXPECT_FALSE(unknown.ceiling_gbytes.has_value());
  EXPECT_EQ(unknown.basis, "no NIC speed known for rank 1 on b");
}

} // namespace
} // namespace fabric::nccltest
