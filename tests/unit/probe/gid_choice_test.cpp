// GID choice on sysfs fixtures: tests/data/probe/gid holds three RoCE NICs as the kernel
// publishes them. mlx5_0 serves eth0 (10.0.0.1), its VLAN eth0.100 (10.100.0.1) and a
// macvlan mv0 (10.0.0.5), each with a RoCE v1 and a v2 entry per address; mlx5_1 serves
// eth1 (10.0.1.1); mlx4_0 serves eth2 (10.0.2.1) with RoCE v1 entries only.
#include <gtest/gtest.h>

#include "common/json.h"
#include "probes/devices/gid_choice.h"

namespace fabric::probes {
namespace {

using rdma::GidType;

SysfsReader nics() {
  return SysfsReader(FABRIC_TEST_DATA_DIR "/probe/gid");
}

std::string message_of(const Error& e) {
  return e.message() + " | hint: " + e.hint();
}

#define EXPECT_MENTIONS(error, text)                                                               \
  EXPECT_NE(message_of(error).find(text), std::string::npos) << message_of(error)

TEST(GidChoice, PlainNetdevGetsItsRoceV2Gid) {
  auto c = choose_gid(nics(), "10.0.0.1", "eth0");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->rdma_device, "mlx5_0");
  EXPECT_EQ(c->port, 1u);
  EXPECT_EQ(c->gid_index, 3u); // index 2 is the same address's RoCE v1 entry
  EXPECT_EQ(c->gid, "::ffff:10.0.0.1");
  EXPECT_EQ(c->type, GidType::kRoceV2);
  EXPECT_EQ(c->netdev, "eth0");
  EXPECT_EQ(c->ipv4, "10.0.0.1");
  EXPECT_NE(c->reason.find("eth0"), std::string::npos);
}

TEST(GidChoice, VlanUpperDeviceGetsItsOwnEntry) {
  auto c = choose_gid(nics(), "10.100.0.1", "eth0.100");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->rdma_device, "mlx5_0");
  EXPECT_EQ(c->gid_index, 7u);
  EXPECT_EQ(c->netdev, "eth0.100");
  EXPECT_EQ(c->type, GidType::kRoceV2);
}

TEST(GidChoice, MacvlanGetsItsOwnEntry) {
  auto c = choose_gid(nics(), "10.0.0.5", "mv0");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->gid_index, 11u);
  EXPECT_EQ(c->gid, "::ffff:10.0.0.5");
  EXPECT_EQ(c->netdev, "mv0");
}

TEST(GidChoice, MissingGidListsWhatTheNetdevHas) {
  auto c = choose_gid(nics(), "10.0.0.99", "eth0");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kNotFound);
  EXPECT_MENTIONS(c.error(), "no GID for that address");
  EXPECT_MENTIONS(c.error(), "index 3 ::ffff:10.0.0.1 RoCE v2");
  EXPECT_MENTIONS(c.error(), "mlx5_0 port 1");
}

TEST(GidChoice, RoceV1OnlyIsRefusedWithTheIndexToForce) {
  auto c = choose_gid(nics(), "10.0.2.1", "eth2");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kUnsupported);
  EXPECT_MENTIONS(c.error(), "only a RoCE v1 GID");
  EXPECT_MENTIONS(c.error(), "mlx4_0 port 1 index 1");
  EXPECT_MENTIONS(c.error(), "--gid-index 1");
}

TEST(GidChoice, AddressOnAnotherNetdevIsNamed) {
  auto c = choose_gid(nics(), "10.0.1.1", "eth0");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kNotFound);
  EXPECT_MENTIONS(c.error(), "belongs to another netdev");
  EXPECT_MENTIONS(c.error(), "mlx5_1 port 1 index 3 on eth1");
}

TEST(GidChoice, NetdevWithoutRdmaIsNamed) {
  auto c = choose_gid(nics(), "192.168.5.5", "eth9");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kNotFound);
  EXPECT_MENTIONS(c.error(), "no RDMA device serves eth9");
  EXPECT_MENTIONS(c.error(), "mlx4_0, mlx5_0, mlx5_1");
}

TEST(GidChoice, TwoDevicesTheNetdevPicksTheDevice) {
  auto second = choose_gid(nics(), "10.0.1.1", "eth1");
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_EQ(second->rdma_device, "mlx5_1");
  EXPECT_EQ(second->gid_index, 3u);

  auto named = choose_gid(nics(), "10.0.1.1", "eth1", "mlx5_1");
  ASSERT_TRUE(named.ok()) << named.error().message();
  EXPECT_EQ(named->rdma_device, "mlx5_1");

  auto wrong = choose_gid(nics(), "10.0.1.1", "eth1", "mlx5_0");
  ASSERT_FALSE(wrong.ok());
  EXPECT_MENTIONS(wrong.error(), "mlx5_0 does not serve eth1");

  auto missing = choose_gid(nics(), "10.0.1.1", "eth1", "mlx5_7");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_MENTIONS(missing.error(), "have: mlx4_0, mlx5_0, mlx5_1");
}

TEST(GidChoice, TwoDevicesOnOneNetdevMustBeNamed) {
  SysfsReader shared(FABRIC_TEST_DATA_DIR "/probe/gid_shared_netdev");
  auto c = choose_gid(shared, "10.0.0.1", "eth0");
  ASSERT_FALSE(c.ok());
  EXPECT_MENTIONS(c.error(), "mlx5_0 port 1 index 1 and rxe0 port 1 index 1");
  EXPECT_MENTIONS(c.error(), "--device");
  auto named = choose_gid(shared, "10.0.0.1", "eth0", "rxe0");
  ASSERT_TRUE(named.ok()) << named.error().message();
  EXPECT_EQ(named->rdma_device, "rxe0");
}

TEST(GidChoice, NoRdmaAtAllAndBadAddress) {
  SysfsReader empty(FABRIC_TEST_DATA_DIR "/probe/no_such_root");
  auto none = choose_gid(empty, "10.0.0.1", "eth0");
  ASSERT_FALSE(none.ok());
  EXPECT_MENTIONS(none.error(), "no RDMA device on this host");

  auto bad = choose_gid(nics(), "10.0.0", "eth0");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_MENTIONS(bad.error(), "'10.0.0' is not an IPv4 address");
}

TEST(GidChoice, ByIndexTakesAnyValidEntry) {
  auto v1 = gid_by_index(nics(), "mlx5_0", 1, 2);
  ASSERT_TRUE(v1.ok()) << v1.error().message();
  EXPECT_EQ(v1->type, GidType::kRoceV1);
  EXPECT_EQ(v1->ipv4, "10.0.0.1");
  EXPECT_EQ(v1->reason, "chosen with --gid-index 2");

  auto link_local = gid_by_index(nics(), "mlx5_0", 1, 1);
  ASSERT_TRUE(link_local.ok());
  EXPECT_EQ(link_local->ipv4, "");
  EXPECT_EQ(link_local->gid, "fe80::e61d:2dff:fe01:1");

  auto unused = gid_by_index(nics(), "mlx4_0", 1, 2); // all-zero slot
  ASSERT_FALSE(unused.ok());
  EXPECT_MENTIONS(unused.error(), "valid: 0, 1");
  auto no_port = gid_by_index(nics(), "mlx4_0", 2, 0);
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.error().code(), ErrorCode::kNotFound);
}

TEST(GidChoice, RdmaPortFollowsTheNetdev) {
  auto vlan = rdma_port_for_netdev(nics(), "eth0.100");
  ASSERT_TRUE(vlan.ok()) << vlan.error().message();
  EXPECT_EQ(vlan->device, "mlx5_0");
  EXPECT_EQ(vlan->port, 1u);
  EXPECT_EQ(rdma_port_for_netdev(nics(), "eth2")->device, "mlx4_0");
  auto none = rdma_port_for_netdev(nics(), "eth9");
  ASSERT_FALSE(none.ok());
  EXPECT_MENTIONS(none.error(), "no RDMA device has a GID on eth9");
  auto both =
      rdma_port_for_netdev(SysfsReader(FABRIC_TEST_DATA_DIR "/probe/gid_shared_netdev"), "eth0");
  ASSERT_FALSE(both.ok());
  EXPECT_MENTIONS(both.error(), "mlx5_0 port 1, rxe0 port 1");
}

GidChoice v2_choice(const std::string& ip, const std::string& peer) {
  GidChoice c;
  c.rdma_device = "mlx5_0";
  c.port = 1;
  c.gid_index = 3;
  c.gid = "::ffff:" + ip;
  c.netdev = "eth0";
  c.type = GidType::kRoceV2;
  c.ipv4 = ip;
  c.peer_ipv4 = peer;
  return c;
}

TEST(GidAgreement, MatchingChoicesAgree) {
  auto r =
      check_gid_agreement(v2_choice("10.0.0.1", "10.0.0.2"), v2_choice("10.0.0.2", "10.0.0.1"));
  EXPECT_TRUE(r.ok()) << r.error().message();
  // Unknown peer addresses skip the address check but not the version check.
  EXPECT_TRUE(check_gid_agreement(v2_choice("10.0.0.1", ""), v2_choice("10.0.0.2", "")).ok());
}

TEST(GidAgreement, RoceVersionMismatchNamesBothAndTheFix) {
  GidChoice peer = v2_choice("10.0.0.2", "10.0.0.1");
  peer.type = GidType::kRoceV1;
  peer.gid_index = 0;
  auto r = check_gid_agreement(v2_choice("10.0.0.1", "10.0.0.2"), peer);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidConfig);
  EXPECT_MENTIONS(r.error(), "peer picked RoCE v1 GID index 0 (::ffff:10.0.0.2 on eth0");
  EXPECT_MENTIONS(r.error(), "this side picked RoCE v2 GID index 3");
  EXPECT_MENTIONS(r.error(), "use --gid-index on the peer");
}

TEST(GidAgreement, GidMustMapToTheAddressTheOtherSideUses) {
  // The peer chose the GID of its second NIC, but we talk to it on its first.
  auto r =
      check_gid_agreement(v2_choice("10.0.0.1", "10.0.0.2"), v2_choice("10.0.1.2", "10.0.0.1"));
  ASSERT_FALSE(r.ok());
  EXPECT_MENTIONS(r.error(),
                  "this side reaches the peer at 10.0.0.2, not at the peer GID's 10.0.1.2");
  auto mine =
      check_gid_agreement(v2_choice("10.0.1.1", "10.0.0.2"), v2_choice("10.0.0.2", "10.0.0.1"));
  ASSERT_FALSE(mine.ok());
  EXPECT_MENTIONS(mine.error(),
                  "the peer reaches this side at 10.0.0.1, not at this GID's 10.0.1.1");
}

TEST(GidAgreement, DifferentFamiliesDisagree) {
  GidChoice peer = v2_choice("10.0.0.2", "10.0.0.1");
  peer.gid = "fe80::1";
  peer.ipv4 = "";
  auto r = check_gid_agreement(v2_choice("10.0.0.1", "10.0.0.2"), peer);
  ASSERT_FALSE(r.ok());
  EXPECT_MENTIONS(r.error(), "different IP families");
}

TEST(GidChoiceJson, RoundTripsThroughTheExchangeFormat) {
  auto chosen = choose_gid(nics(), "10.100.0.1", "eth0.100");
  ASSERT_TRUE(chosen.ok());
  chosen->peer_ipv4 = "10.100.0.2";
  json::Writer w(false);
  write_gid_choice_json(w, *chosen);
  auto doc = json::parse(w.str(), "gid choice");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_STREQ((*doc)["type"].GetString(), "RoCE v2");
  auto back = parse_gid_choice(*doc, "gid");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->rdma_device, "mlx5_0");
  EXPECT_EQ(back->gid_index, 7u);
  EXPECT_EQ(back->gid, "::ffff:10.100.0.1");
  EXPECT_EQ(back->netdev, "eth0.100");
  EXPECT_EQ(back->type, GidType::kRoceV2);
  EXPECT_EQ(back->peer_ipv4, "10.100.0.2");
  EXPECT_EQ(back->reason, chosen->reason);
}

TEST(GidChoiceJson, BadFieldsAreNamed) {
  auto doc = json::parse(R"({"rdma_device":"mlx5_0","port":1,"gid_index":-1,"gid":"::1",
                             "netdev":"eth0","type":"RoCE v2"})",
                         "test");
  ASSERT_TRUE(doc.ok());
  auto r = parse_gid_choice(*doc, "gid");
  ASSERT_FALSE(r.ok());
  EXPECT_MENTIONS(r.error(), "gid.gid_index");
  auto type = json::parse(R"({"rdma_device":"mlx5_0","port":1,"gid_index":1,"gid":"::1",
                              "netdev":"eth0","type":"RoCE v9"})",
                          "test");
  ASSERT_TRUE(type.ok());
  auto bad_type = parse_gid_choice(*type, "gid");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_MENTIONS(bad_type.error(), "gid.type");
}

TEST(LocalRoute, LoopbackPeerIsReachedFromLo) {
  // A UDP connect() sends nothing; it only asks the routing table.
  auto r = local_route_to("127.0.0.1");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->local_ipv4, "127.0.0.1");
  EXPECT_EQ(r->netdev, "lo");
  auto bad = local_route_to("not-an-address");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
}

} // namespace
} // namespace fabric::probes
