// local_route_to against the real routing table: the local address and netdev towards a
// peer in another namespace, through an address label (eth0:1 style) and a macvlan, and
// the error when there is no route at all.
#include <gtest/gtest.h>

#include "common/netns.h"
#include "probes/devices/gid_choice.h"
#include "tests/netns/test_network.h"

namespace fabric::probes {
namespace {

using fabric::testing::run_checked;
using fabric::testing::TestNetwork;

class LocalRouteNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fabric::testing::can_manage_network()) GTEST_SKIP() << fabric::testing::skip_reason();
    here_ = net_.add_namespace("h");
    peer_ = net_.add_namespace("p");
    std::tie(a_, b_) = net_.add_veth("r", net_.ns_name("h"), net_.ns_name("p"));
    ASSERT_FALSE(a_.empty());
    ip_here({"addr", "add", "10.213.0.1/24", "dev", a_});
    ip_peer({"addr", "add", "10.213.0.2/24", "dev", b_});
  }

  void ip_here(std::vector<std::string> args) { ip_in(net_.ns_name("h"), std::move(args)); }
  void ip_peer(std::vector<std::string> args) { ip_in(net_.ns_name("p"), std::move(args)); }
  void ip_in(const std::string& ns, std::vector<std::string> args) {
    args.insert(args.begin(), {"ip", "-n", ns});
    auto r = run_checked(args);
    ASSERT_TRUE(r.ok()) << r.error().message();
  }

  TestNetwork net_;
  std::string here_, peer_, a_, b_;
};

TEST_F(LocalRouteNetns, PeerOnTheVethIsReachedFromItsAddress) {
  auto route = netns::run_in(here_, [] { return local_route_to("10.213.0.2"); });
  ASSERT_TRUE(route.ok()) << route.error().message();
  EXPECT_EQ(route->local_ipv4, "10.213.0.1");
  EXPECT_EQ(route->netdev, a_);
  auto back = netns::run_in(peer_, [] { return local_route_to("10.213.0.1"); });
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->local_ipv4, "10.213.0.2");
  EXPECT_EQ(back->netdev, b_);
}

TEST_F(LocalRouteNetns, AddressLabelIsMappedToItsNetdev) {
  ip_here({"addr", "add", "10.213.1.1/24", "dev", a_, "label", a_ + ":1"});
  auto route = netns::run_in(here_, [] { return local_route_to("10.213.1.9"); });
  ASSERT_TRUE(route.ok()) << route.error().message();
  EXPECT_EQ(route->local_ipv4, "10.213.1.1");
  EXPECT_EQ(route->netdev, a_);
}

TEST_F(LocalRouteNetns, MacvlanOwnsItsOwnAddress) {
  const std::string mv = net_.prefix() + "mv";
  ip_here({"link", "add", mv, "link", a_, "type", "macvlan", "mode", "bridge"});
  ip_here({"addr", "add", "10.213.2.1/24", "dev", mv});
  ip_here({"link", "set", mv, "up"});
  auto route = netns::run_in(here_, [] { return local_route_to("10.213.2.7"); });
  ASSERT_TRUE(route.ok()) << route.error().message();
  EXPECT_EQ(route->local_ipv4, "10.213.2.1");
  EXPECT_EQ(route->netdev, mv);
}

TEST_F(LocalRouteNetns, NoRouteIsAnErrorWithAHint) {
  auto route = netns::run_in(here_, [] { return local_route_to("203.0.113.7"); });
  ASSERT_FALSE(route.ok());
  EXPECT_EQ(route.error().sys_errno(), ENETUNREACH) << route.error().message();
  EXPECT_NE(route.error().message().find("finding the route to 203.0.113.7"), std::string::npos);
  EXPECT_NE(route.error().hint().find("ip route get 203.0.113.7"), std::string::npos);
}

} // namespace
} // namespace fabric::probes
