// The namespace runner and the libnl socket against the real kernel.
#include <fcntl.h>

#include <set>
#include <thread>

#include <netlink/cache.h>
#include <netlink/route/link.h>

#include <gtest/gtest.h>

#include "common/netlink_socket.h"
#include "common/netns.h"
#include "tests/netns/test_network.h"

namespace fabric {
namespace {

using testing::TestNetwork;

class NetnsTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!testing::can_manage_network()) GTEST_SKIP() << testing::skip_reason();
  }
};

// The names of the links in the calling thread's namespace, through libnl.
Result<std::set<std::string>> link_names() {
  FABRIC_ASSIGN_OR_RETURN(auto sock, netlink::connect_route());
  FABRIC_ASSIGN_OR_RETURN(auto cache, netlink::read_links(sock.get()));
  std::set<std::string> names;
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
       obj = nl_cache_get_next(obj)) {
    names.insert(rtnl_link_get_name(reinterpret_cast<rtnl_link*>(obj)));
  }
  return names;
}

TEST_F(NetnsTest, RunInSeesTheNamespacesLinksAndLeavesTheCallerWhereItWas) {
  TestNetwork net;
  std::string pod = net.add_namespace("pod");
  auto [host_end, pod_end] = net.add_veth("v", "", net.ns_name("pod"));
  auto before = netns::open_current();
  ASSERT_TRUE(before.ok());

  auto inside = netns::run_in(pod, [] { return link_names(); });
  ASSERT_TRUE(inside.ok()) << inside.error().message();
  EXPECT_TRUE(inside->count("lo"));
  EXPECT_TRUE(inside->count(pod_end));
  EXPECT_FALSE(inside->count(host_end));

  auto after = netns::open_current();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(*netns::same(before->get(), after->get()));
  auto outside = link_names();
  ASSERT_TRUE(outside.ok());
  EXPECT_TRUE(outside->count(host_end));
  EXPECT_FALSE(outside->count(pod_end));
}

TEST_F(NetnsTest, RunInReturnsTheFunctionsOwnError) {
  TestNetwork net;
  std::string pod = net.add_namespace("pod");
  auto r = netns::run_in(pod, []() -> Result<void> {
    return Error(ErrorCode::kAlreadyExists, "renaming eth0", "net1 exists");
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(r.error().message(), "renaming eth0: net1 exists");
}

TEST_F(NetnsTest, ConcurrentRunsEachSeeTheirOwnNamespace) {
  TestNetwork net;
  constexpr int kPods = 6;
  std::vector<std::string> paths, ends;
  for (int i = 0; i < kPods; ++i) {
    paths.push_back(net.add_namespace("p" + std::to_string(i)));
    ends.push_back(
        net.add_veth("e" + std::to_string(i), "", net.ns_name("p" + std::to_string(i))).second);
  }
  std::vector<Result<std::set<std::string>>> results(kPods, Error(ErrorCode::kInternal, "unset"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back(
        [&, i] { results[i] = netns::run_in(paths[i], [] { return link_names(); }); });
  }
  for (auto& t : threads)
    t.join();
  for (int i = 0; i < kPods; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error().message();
    EXPECT_EQ(*results[i], (std::set<std::string>{"lo", ends[i]})) << "pod " << i;
  }
}

TEST_F(NetnsTest, DeletedNamespaceIsReportedNotEntered) {
  std::string path;
  {
    TestNetwork net;
    path = net.add_namespace("gone");
  }
  auto r = netns::run_in(path, [] { return link_names(); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(path), std::string::npos) << r.error().message();
}

// A bad fd is named before it reaches the kernel (which would say EBADF or EINVAL).
TEST(NetnsFd, OnlyAnOpenNamespaceFilePasses) {
  UniqueFd own(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(own);
  EXPECT_TRUE(netns::check_fd(own.get(), "fd").ok());

  auto closed = netns::check_fd(-1, "target network namespace fd -1");
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(closed.error().message(),
            "target network namespace fd -1: is not an open file descriptor");

  // A /proc file (procfs, not nsfs), and a namespace of another kind.
  UniqueFd file(::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(file);
  auto not_ns = netns::check_fd(file.get(), "fd");
  ASSERT_FALSE(not_ns.ok());
  EXPECT_EQ(not_ns.error().message(), "fd: is not a namespace file");
  UniqueFd mount_ns(::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(mount_ns);
  auto other = netns::check_fd(mount_ns.get(), "fd");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message(), "fd: is a namespace file, but not a network one");
}

TEST_F(NetnsTest, TestNetworkRemovesEverythingItMade) {
  std::string ns, host_end;
  {
    TestNetwork net;
    net.add_namespace("a");
    ns = net.ns_name("a");
    host_end = net.add_veth("x", "", ns).first;
    ASSERT_TRUE(testing::namespace_exists(ns));
    ASSERT_TRUE(testing::host_link_exists(host_end));
  }
  EXPECT_FALSE(testing::namespace_exists(ns));
  EXPECT_FALSE(testing::host_link_exists(host_end));
}

TEST_F(NetnsTest, NetlinkSocketReadsTheHostLinkTable) {
  auto names = link_names();
  ASSERT_TRUE(names.ok()) << names.error().message();
  EXPECT_TRUE(names->count("lo"));
}

} // namespace
} // namespace fabric
