#include <gtest/gtest.h>

#include "common/rdma_device.h"

namespace fabric::rdma {
namespace {

TEST(RdmaDevice, Ipv4MappedGidsYieldTheAddress) {
  uint8_t raw[16];
  ASSERT_TRUE(parse_gid("0000:0000:0000:0000:0000:ffff:0a4d:000b", raw));
  EXPECT_EQ(gid_to_string(raw), "::ffff:10.77.0.11");
  EXPECT_EQ(ipv4_of_gid(raw), "10.77.0.11");
  ASSERT_TRUE(parse_gid("fe80::5054:ff:fe12:3456", raw));
  EXPECT_FALSE(ipv4_of_gid(raw).has_value());
  EXPECT_FALSE(parse_gid("not-a-gid", raw));
}

TEST(RdmaDevice, EnumsBecomeWords) {
  EXPECT_EQ(port_state_name(4), "ACTIVE");
  EXPECT_EQ(port_state_name(1), "DOWN");
  EXPECT_EQ(port_state_name(42), "UNKNOWN(42)");
  EXPECT_EQ(phys_state_name(5), "LINK_UP");
  EXPECT_EQ(mtu_enum_to_bytes(3), 1024u);
  EXPECT_EQ(mtu_enum_to_bytes(5), 4096u);
  EXPECT_EQ(mtu_enum_to_bytes(0), 0u);
  EXPECT_EQ(width_name(2), "4X");
  EXPECT_EQ(width_lanes(16), 2u);
  EXPECT_EQ(speed_name(32), "EDR");
  EXPECT_EQ(*lane_speed_gbps(64), 50.0);
  EXPECT_FALSE(lane_speed_gbps(3).has_value());
  EXPECT_EQ(gid_type_name(GidType::kRoceV2), "RoCE v2");
}

} // namespace
} // namespace fabric::rdma
