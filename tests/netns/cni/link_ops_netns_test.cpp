// The CNI plugin's link, address, route and sysctl operations against the real kernel.
//
// Each test builds a "host" namespace holding a veth pair (one end is the macvlan parent,
// standing in for the RoCE netdev) and a "pod" namespace, acts inside them with
// netns::run_in, and checks the outcome with iproute2, independently of the code under
// test. TestNetwork deletes both namespaces, and every link in them, afterwards.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "cni/link_ops.h"
#include "cni/sysctl.h"
#include "common/netns.h"
#include "common/subprocess.h"
#include "tests/netns/test_network.h"

namespace fabric::cni {
namespace {

using fabric::testing::TestNetwork;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class LinkOpsNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fabric::testing::can_manage_network()) GTEST_SKIP() << fabric::testing::skip_reason();
    host_ns_ = net_.ns_name("host");
    pod_ns_ = net_.ns_name("pod");
    host_ = net_.add_namespace("host");
    pod_ = net_.add_namespace("pod");
    parent_ = net_.add_veth("p", host_ns_, host_ns_).first;
    auto fd = netns::open(pod_);
    ASSERT_TRUE(fd.ok()) << fd.error().message();
    pod_fd_ = std::move(*fd);
    ASSERT_FALSE(parent_.empty());
  }

  template <typename Fn> auto in_host(Fn&& fn) { return netns::run_in(host_, fn); }
  template <typename Fn> auto in_pod(Fn&& fn) { return netns::run_in(pod_, fn); }

  // `ip -n NS ARGS...`: its stdout, or "" after reporting the failure.
  std::string ip(const std::string& ns, std::vector<std::string> args) {
    args.insert(args.begin(), {"ip", "-n", ns});
    auto out = fabric::testing::run_checked(args);
    if (!out.ok()) {
      ADD_FAILURE() << out.error().message();
      return "";
    }
    return *out;
  }

  bool has_link(const std::string& ns, const std::string& name) {
    auto r = run_subprocess({"ip", "-n", ns, "link", "show", "dev", name});
    return r.ok() && r->exit_status == 0;
  }

  // A macvlan `name` in the pod on the host's parent, created by the code under test.
  void make_pod_macvlan(const std::string& name, std::optional<int> mtu = std::nullopt) {
    auto r = in_host(
        [&] { return create_macvlan(parent_, pod_fd_.get(), name, MacvlanMode::kBridge, mtu); });
    ASSERT_TRUE(r.ok()) << r.error().message();
  }

  TestNetwork net_;
  std::string host_ns_, pod_ns_; // names for `ip -n`
  std::string host_, pod_;       // paths for netns::run_in
  std::string parent_;
  UniqueFd pod_fd_;
};

TEST_F(LinkOpsNetns, MacvlanIsCreatedInsideThePodAndNeverOnTheHost) {
  make_pod_macvlan("tmpa1b2c3");
  EXPECT_TRUE(has_link(pod_ns_, "tmpa1b2c3"));
  EXPECT_FALSE(has_link(host_ns_, "tmpa1b2c3"));
  EXPECT_FALSE(fabric::testing::host_link_exists("tmpa1b2c3"));

  auto parent = in_host([&] { return get_link(parent_); });
  ASSERT_TRUE(parent.ok()) << parent.error().message();
  auto link = in_pod([] { return get_link("tmpa1b2c3"); });
  ASSERT_TRUE(link.ok()) << link.error().message();
  EXPECT_EQ(link->name, "tmpa1b2c3");
  EXPECT_EQ(link->kind, "macvlan");
  EXPECT_EQ(link->mtu, parent->mtu); // no MTU given: the parent's
  EXPECT_FALSE(link->admin_up);
  EXPECT_EQ(link->operstate, "down");
  // The macvlan's IFLA_LINK is its parent's index in the host namespace.
  EXPECT_EQ(link->parent_ifindex, parent->ifindex);
  EXPECT_TRUE(
      contains(ip(pod_ns_, {"-d", "link", "show", "dev", "tmpa1b2c3"}), "macvlan mode bridge"));
}

TEST_F(LinkOpsNetns, MacvlanModeReachesTheKernel) {
  auto r = in_host([&] {
    return create_macvlan(parent_, pod_fd_.get(), "mvpriv", MacvlanMode::kPrivate, std::nullopt);
  });
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(
      contains(ip(pod_ns_, {"-d", "link", "show", "dev", "mvpriv"}), "macvlan mode private"));
}

TEST_F(LinkOpsNetns, MacvlanMtuIsTheRequestedOneAndNeverAboveTheParents) {
  ip(host_ns_, {"link", "set", "dev", parent_, "mtu", "9000"});
  make_pod_macvlan("mvjumbo", 4000);
  EXPECT_TRUE(contains(ip(pod_ns_, {"link", "show", "dev", "mvjumbo"}), "mtu 4000"));

  auto too_big = in_host(
      [&] { return create_macvlan(parent_, pod_fd_.get(), "mvbig", MacvlanMode::kBridge, 9001); });
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(too_big.error().message(), "9001")) << too_big.error().message();
  EXPECT_TRUE(contains(too_big.error().message(), parent_ + ": 9000")) << too_big.error().message();
  EXPECT_FALSE(has_link(pod_ns_, "mvbig"));

  // Raising it later, from inside the pod, is refused by the kernel itself.
  auto raised = in_pod([] { return set_link_mtu("mvjumbo", 9500); });
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.error().sys_errno(), EINVAL);
  EXPECT_TRUE(contains(raised.error().message(), "MTU of mvjumbo to 9500"))
      << raised.error().message();
  EXPECT_TRUE(contains(raised.error().hint(), "parent's"));
  EXPECT_TRUE(contains(ip(pod_ns_, {"link", "show", "dev", "mvjumbo"}), "mtu 4000"));

  auto lowered = in_pod([] { return set_link_mtu("mvjumbo", 1400); });
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  EXPECT_TRUE(contains(ip(pod_ns_, {"link", "show", "dev", "mvjumbo"}), "mtu 1400"));
}

TEST_F(LinkOpsNetns, RenameSetMacAndBringUpInsideThePod) {
  make_pod_macvlan("tmpd4e5f6");
  auto r = in_pod([]() -> Result<void> {
    FABRIC_TRY(rename_link("tmpd4e5f6", "net1"));
    FABRIC_TRY(set_link_mac("net1", "02:11:22:33:44:55"));
    return set_link_up("net1", true);
  });
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE(has_link(pod_ns_, "tmpd4e5f6"));
  const std::string shown = ip(pod_ns_, {"link", "show", "dev", "net1"});
  EXPECT_TRUE(contains(shown, "02:11:22:33:44:55")) << shown;
  EXPECT_TRUE(contains(shown, "UP")) << shown;

  auto info = in_pod([] { return get_link("net1"); });
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_TRUE(info->admin_up);
  EXPECT_EQ(info->mac, "02:11:22:33:44:55");
  auto gone = in_pod([] { return find_link("tmpd4e5f6"); });
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());

  // Kernels before 6.2 rename only links that are down; later ones rename live links too.
  // Either way the outcome is definite: renamed, or refused saying why.
  auto live = in_pod([] { return rename_link("net1", "net2"); });
  if (live.ok()) {
    EXPECT_TRUE(has_link(pod_ns_, "net2"));
    ASSERT_TRUE(in_pod([] { return rename_link("net2", "net1"); }).ok());
  } else {
    EXPECT_TRUE(contains(live.error().message(), "net1 is up")) << live.error().message();
    EXPECT_TRUE(has_link(pod_ns_, "net1"));
  }

  auto down = in_pod([] { return set_link_up("net1", false); });
  ASSERT_TRUE(down.ok()) << down.error().message();
  EXPECT_FALSE(contains(ip(pod_ns_, {"link", "show", "dev", "net1"}), ",UP"));
}

TEST_F(LinkOpsNetns, BadMacAddressesAreRefusedBeforeTheKernel) {
  make_pod_macvlan("mvmac");
  for (const char* bad : {"02:11:22:33:44", "02-11-22-33-44-55", "zz:11:22:33:44:55",
                          "01:00:5e:00:00:01", "00:00:00:00:00:00"}) {
    auto r = in_pod([&] { return set_link_mac("mvmac", bad); });
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_TRUE(contains(r.error().message(), bad)) << r.error().message();
  }
}

TEST_F(LinkOpsNetns, RenameOntoATakenNameIsAlreadyExists) {
  make_pod_macvlan("mva");
  make_pod_macvlan("mvb");
  auto r = in_pod([] { return rename_link("mva", "mvb"); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_TRUE(contains(r.error().message(), "mvb already exists")) << r.error().message();
  EXPECT_TRUE(has_link(pod_ns_, "mva"));
}

TEST_F(LinkOpsNetns, Ipv4AndIpv6AddressesAndRoutes) {
  make_pod_macvlan("net1");
  auto configured = in_pod([]() -> Result<void> {
    FABRIC_TRY(add_address("net1", "10.77.0.5/24"));
    FABRIC_TRY(add_address("net1", "fd00:77::5/64"));
    FABRIC_TRY(set_link_up("net1", true));
    FABRIC_TRY(add_route("net1", {"10.1.0.0/16", std::string("10.77.0.1")}));
    FABRIC_TRY(add_route("net1", {"0.0.0.0/0", std::string("10.77.0.1")}));
    FABRIC_TRY(add_route("net1", {"192.168.50.0/24", std::nullopt}));
    return add_route("net1", {"fd01::/64", std::string("fd00:77::1")});
  });
  ASSERT_TRUE(configured.ok()) << configured.error().message();

  const std::string addrs = ip(pod_ns_, {"addr", "show", "dev", "net1"});
  EXPECT_TRUE(contains(addrs, "inet 10.77.0.5/24")) << addrs;
  EXPECT_TRUE(contains(addrs, "inet6 fd00:77::5/64")) << addrs;
  const std::string routes4 = ip(pod_ns_, {"route", "show", "dev", "net1"});
  EXPECT_TRUE(contains(routes4, "default via 10.77.0.1")) << routes4;
  EXPECT_TRUE(contains(routes4, "10.1.0.0/16 via 10.77.0.1")) << routes4;
  EXPECT_TRUE(contains(routes4, "192.168.50.0/24 scope link")) << routes4;
  const std::string routes6 = ip(pod_ns_, {"-6", "route", "show", "dev", "net1"});
  EXPECT_TRUE(contains(routes6, "fd01::/64 via fd00:77::1")) << routes6;
  // Nothing of it reached the host namespace's routing table.
  EXPECT_FALSE(contains(ip(host_ns_, {"route", "show"}), "10.1.0.0/16"));

  auto listed = in_pod([] { return list_addresses("net1"); });
  ASSERT_TRUE(listed.ok()) << listed.error().message();
  ASSERT_GE(listed->size(), 2u);
  EXPECT_EQ(listed->front(), "10.77.0.5/24"); // IPv4 first
  EXPECT_NE(std::find(listed->begin(), listed->end(), "fd00:77::5/64"), listed->end());

  auto route_list = in_pod([] { return list_routes("net1"); });
  ASSERT_TRUE(route_list.ok()) << route_list.error().message();
  auto has_route = [&](const RouteSpec& r) {
    return std::find(route_list->begin(), route_list->end(), r) != route_list->end();
  };
  EXPECT_TRUE(has_route({"0.0.0.0/0", std::string("10.77.0.1")}));
  EXPECT_TRUE(has_route({"10.1.0.0/16", std::string("10.77.0.1")}));
  EXPECT_TRUE(has_route({"192.168.50.0/24", std::nullopt}));
  EXPECT_TRUE(has_route({"10.77.0.0/24", std::nullopt})); // the kernel's connected route
  EXPECT_TRUE(has_route({"fd01::/64", std::string("fd00:77::1")}));
}

TEST_F(LinkOpsNetns, AddressAndRouteErrorsNameWhatWasRefused) {
  make_pod_macvlan("net1");
  auto first = in_pod([]() -> Result<void> {
    FABRIC_TRY(add_address("net1", "10.77.0.5/24"));
    FABRIC_TRY(set_link_up("net1", true));
    return add_route("net1", {"10.1.0.0/16", std::string("10.77.0.1")});
  });
  ASSERT_TRUE(first.ok()) << first.error().message();

  auto dup_addr = in_pod([] { return add_address("net1", "10.77.0.5/24"); });
  ASSERT_FALSE(dup_addr.ok());
  EXPECT_EQ(dup_addr.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_TRUE(contains(dup_addr.error().message(), "10.77.0.5/24"));

  auto dup_route = in_pod([] {
    return add_route("net1", {"10.1.0.0/16", std::string("10.77.0.1")});
  });
  ASSERT_FALSE(dup_route.ok());
  EXPECT_EQ(dup_route.error().code(), ErrorCode::kAlreadyExists);

  // No address on net1 covers 192.168.9.1.
  auto unreachable = in_pod([] {
    return add_route("net1", {"10.2.0.0/16", std::string("192.168.9.1")});
  });
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.error().sys_errno(), ENETUNREACH) << unreachable.error().message();
  EXPECT_TRUE(contains(unreachable.error().message(), "via 192.168.9.1 on net1"));

  for (const char* bad : {"10.77.0.6", "10.77.0.6/33", "10.77.0.300/24", "fd00::6/129", "net/24"}) {
    auto r = in_pod([&] { return add_address("net1", bad); });
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_TRUE(contains(r.error().message(), bad)) << r.error().message();
  }
  auto mixed = in_pod([] { return add_route("net1", {"fd02::/64", std::string("10.77.0.1")}); });
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.error().code(), ErrorCode::kInvalidArgument);

  auto no_link = in_pod([] { return add_address("net9", "10.77.0.6/24"); });
  ASSERT_FALSE(no_link.ok());
  EXPECT_EQ(no_link.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(no_link.error().message(), "net9"));
}

TEST_F(LinkOpsNetns, SysctlsLandInThePodNotTheHost) {
  make_pod_macvlan("net1");
  auto host_all = read_sysctl("net/ipv4/conf/all/arp_notify");
  ASSERT_TRUE(host_all.ok()) << host_all.error().message();

  auto written = in_pod([&]() -> Result<void> {
    FABRIC_TRY(write_sysctl("net/ipv4/conf/net1/arp_notify", "1"));
    FABRIC_TRY(write_sysctl("net/ipv6/conf/net1/ndisc_notify", "1"));
    // A key every namespace has: only the pod's copy may change.
    return write_sysctl("net/ipv4/conf/all/arp_notify", host_all.value() == "1" ? "0" : "1");
  });
  ASSERT_TRUE(written.ok()) << written.error().message();

  EXPECT_EQ(*in_pod([] { return read_sysctl("net/ipv4/conf/net1/arp_notify"); }), "1");
  EXPECT_EQ(*in_pod([] { return read_sysctl("net/ipv6/conf/net1/ndisc_notify"); }), "1");
  EXPECT_NE(*in_pod([] { return read_sysctl("net/ipv4/conf/all/arp_notify"); }), *host_all);
  EXPECT_EQ(*read_sysctl("net/ipv4/conf/all/arp_notify"), *host_all);
  EXPECT_EQ(*in_host([] { return read_sysctl("net/ipv4/conf/all/arp_notify"); }), *host_all);

  // net1 exists only in the pod: its keys do not exist in the host namespace.
  auto host_side = in_host([] { return write_sysctl("net/ipv4/conf/net1/arp_notify", "1"); });
  ASSERT_FALSE(host_side.ok());
  EXPECT_EQ(host_side.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(host_side.error().message(), "net/ipv4/conf/net1/arp_notify"));
}

TEST_F(LinkOpsNetns, SysctlKeysAndValuesAreChecked) {
  for (const char* bad : {"../../etc/passwd", "/proc/sys/net/ipv4/ip_forward", "net//ipv4", "",
                          "net/ipv4/conf/a b/arp_notify"}) {
    auto r = write_sysctl(bad, "1");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
  }
  make_pod_macvlan("net1");
  auto refused = in_pod([] { return write_sysctl("net/ipv4/conf/net1/arp_notify", "yes"); });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().sys_errno(), EINVAL);
  EXPECT_TRUE(contains(refused.error().message(), "arp_notify to yes"));
}

TEST_F(LinkOpsNetns, DeleteRemovesTheLinkAndASecondDeleteIsNotFound) {
  make_pod_macvlan("net1");
  ASSERT_TRUE(in_pod([] { return delete_link("net1"); }).ok());
  EXPECT_FALSE(has_link(pod_ns_, "net1"));
  auto again = in_pod([] { return delete_link("net1"); });
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(again.error().message(), "net1"));
  // The parent is untouched.
  EXPECT_TRUE(has_link(host_ns_, parent_));
}

TEST_F(LinkOpsNetns, MoveLinkIntoThePodUnderTheNewNameAndBack) {
  auto [nic, peer] = net_.add_veth("x", host_ns_, host_ns_);
  auto host_fd = netns::open(host_);
  ASSERT_TRUE(host_fd.ok());

  auto in = in_host([&] { return move_link(nic, pod_fd_.get(), "net1"); });
  ASSERT_TRUE(in.ok()) << in.error().message();
  EXPECT_FALSE(has_link(host_ns_, nic));
  EXPECT_TRUE(has_link(pod_ns_, "net1"));
  EXPECT_FALSE(has_link(pod_ns_, nic));

  // DEL in exclusive mode: back to the host under its own name.
  auto out = in_pod([&] { return move_link("net1", host_fd->get(), nic); });
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_TRUE(has_link(host_ns_, nic));
  EXPECT_FALSE(has_link(pod_ns_, "net1"));
  // Still the same veth: its peer is still attached.
  EXPECT_TRUE(contains(ip(host_ns_, {"link", "show", "dev", nic}), nic + "@" + peer));
}

TEST_F(LinkOpsNetns, MoveOntoANameTakenInThePodIsRefusedWithoutMoving) {
  auto [nic, peer] = net_.add_veth("x", host_ns_, host_ns_);
  make_pod_macvlan("net1");
  auto r = in_host([&] { return move_link(nic, pod_fd_.get(), "net1"); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_TRUE(contains(r.error().message(), "net1 already exists in the target"))
      << r.error().message();
  EXPECT_TRUE(contains(r.error().message(), "not moved"));
  EXPECT_TRUE(has_link(host_ns_, nic));
  EXPECT_FALSE(has_link(pod_ns_, nic));
  auto pods = in_pod([] { return get_link("net1"); });
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(pods->kind, "macvlan"); // the pod's own net1 is untouched
}

TEST_F(LinkOpsNetns, MoveOfAMissingLinkOrToABadFdFails) {
  auto missing = in_host([&] { return move_link("nosuch0", pod_fd_.get(), "net1"); });
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(missing.error().message(), "nosuch0"));

  auto bad_fd = in_host([&] { return move_link(parent_, -1, "net1"); });
  ASSERT_FALSE(bad_fd.ok());
  EXPECT_EQ(bad_fd.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(has_link(host_ns_, parent_));
}

TEST_F(LinkOpsNetns, MissingParentIsNotFoundNamingIt) {
  auto r = in_host([&] {
    return create_macvlan("nosuch0", pod_fd_.get(), "net1", MacvlanMode::kBridge, std::nullopt);
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(r.error().message(), "nosuch0")) << r.error().message();
  EXPECT_FALSE(has_link(pod_ns_, "net1"));
}

TEST_F(LinkOpsNetns, MissingOrWrongNamespaceFdIsRefusedNamingIt) {
  UniqueFd closed(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int stale = closed.get();
  closed.reset();
  UniqueFd not_a_namespace(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  for (int fd : {-1, stale, not_a_namespace.get()}) {
    auto r = in_host(
        [&] { return create_macvlan(parent_, fd, "net1", MacvlanMode::kBridge, std::nullopt); });
    ASSERT_FALSE(r.ok()) << fd;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << fd;
    EXPECT_TRUE(contains(r.error().message(), "network namespace fd " + std::to_string(fd)))
        << r.error().message();
  }
  EXPECT_FALSE(has_link(host_ns_, "net1"));
}

TEST_F(LinkOpsNetns, DuplicateNameInThePodIsAlreadyExists) {
  make_pod_macvlan("net1");
  auto r = in_host([&] {
    return create_macvlan(parent_, pod_fd_.get(), "net1", MacvlanMode::kBridge, std::nullopt);
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_TRUE(contains(r.error().message(), "net1 already exists in the target network namespace"))
      << r.error().message();
}

// Older kernels (6.1 among them) also look the new name up in the caller's namespace;
// without NLM_F_EXCL they would take the host's link of that name as the one to change,
// and move it into the pod. Recent ones look only in the target. Either way the host's
// link must stay where and what it is.
TEST_F(LinkOpsNetns, NameTakenOnTheHostNeverMovesTheHostLink) {
  auto [other, other_peer] = net_.add_veth("o", host_ns_, host_ns_);
  auto r = in_host([&] {
    return create_macvlan(parent_, pod_fd_.get(), other, MacvlanMode::kBridge, std::nullopt);
  });
  if (r.ok()) {
    auto created = in_pod([&] { return get_link(other); });
    ASSERT_TRUE(created.ok()) << created.error().message();
    EXPECT_EQ(created->kind, "macvlan");
  } else {
    EXPECT_EQ(r.error().code(), ErrorCode::kAlreadyExists);
    EXPECT_TRUE(contains(r.error().message(), "the parent's")) << r.error().message();
    EXPECT_TRUE(contains(r.error().hint(), "temporary name"));
    EXPECT_FALSE(has_link(pod_ns_, other));
  }
  auto host_link = in_host([&] { return get_link(other); });
  ASSERT_TRUE(host_link.ok()) << host_link.error().message();
  EXPECT_EQ(host_link->kind, "veth");
  EXPECT_TRUE(contains(ip(host_ns_, {"link", "show", "dev", other}), other + "@" + other_peer));
}

TEST_F(LinkOpsNetns, GetLinkNamesWhatIsMissingOrMalformed) {
  auto missing = in_pod([] { return get_link("net7"); });
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().message(), "link net7: no such link in this network namespace");
  auto found = in_pod([] { return find_link("lo"); });
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->ifindex, 1);
  auto too_long = get_link("a-name-far-too-long");
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code(), ErrorCode::kInvalidArgument);
}

} // namespace
} // namespace fabric::cni
