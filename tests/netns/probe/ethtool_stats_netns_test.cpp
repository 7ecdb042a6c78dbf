// The ethtool statistics ioctl against the real kernel: a veth reports peer_ifindex and
// per-queue counters but no pause counters; loopback has no statistics (noted, not an
// error); a netdev that does not exist is a clear error.
#include <net/if.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "common/netns.h"
#include "probes/devices/counters.h"
#include "libs/ethtool/ethtool_stats.h"
#include "tests/netns/test_network.h"

namespace fabric::probes {
namespace {

using fabric::testing::TestNetwork;

// An RDMA port's sysfs for read_counters (the host has no RDMA device); the ethtool part,
// the one under test here, is real.
SysfsReader mlx5_fixture() {
  return SysfsReader(FABRIC_TEST_DATA_DIR "/probe/counters/mlx5");
}

class EthtoolNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fabric::testing::can_manage_network()) GTEST_SKIP() << fabric::testing::skip_reason();
    ns_ = net_.add_namespace("eth");
    std::tie(a_, b_) = net_.add_veth("e", net_.ns_name("eth"), net_.ns_name("eth"));
    ASSERT_FALSE(a_.empty());
  }

  TestNetwork net_;
  std::string ns_, a_, b_;
};

TEST_F(EthtoolNetns, VethStatisticsComeThroughTheIoctl) {
  struct Seen {
    std::vector<EthtoolStat> stats;
    unsigned peer_index;
  };
  auto seen = netns::run_in(ns_, [&]() -> Result<Seen> {
    FABRIC_ASSIGN_OR_RETURN(auto stats, read_ethtool_stats(a_));
    return Seen{std::move(stats), if_nametoindex(b_.c_str())};
  });
  ASSERT_TRUE(seen.ok()) << seen.error().message();
  const auto& stats = seen->stats;
  auto peer = std::find_if(stats.begin(), stats.end(),
                           [](const EthtoolStat& s) { return s.name == "peer_ifindex"; });
  ASSERT_NE(peer, stats.end());
  ASSERT_NE(seen->peer_index, 0u);
  EXPECT_EQ(peer->value, seen->peer_index);
  EXPECT_TRUE(std::any_of(stats.begin(), stats.end(), [](const EthtoolStat& s) {
    return s.name.rfind("rx_queue_0_", 0) == 0;
  }));
  EXPECT_FALSE(std::any_of(stats.begin(), stats.end(),
                           [](const EthtoolStat& s) { return is_pause_stat(s.name); }));
}

TEST_F(EthtoolNetns, CountersOnVethHaveNoPauseCountersAndSayWhy) {
  auto snap = netns::run_in(ns_, [&] { return read_counters(mlx5_fixture(), "mlx5_0", 1, a_); });
  ASSERT_TRUE(snap.ok()) << snap.error().message();
  for (const auto& [key, value] : snap->values)
    EXPECT_NE(key.rfind("eth.", 0), 0u) << key;
  EXPECT_EQ(snap->values.count("port.xmit_bytes"), 1u);
  ASSERT_FALSE(snap->notes.empty());
  EXPECT_NE(snap->notes.back().find(a_ + "'s ethtool statistics have no pause counters"),
            std::string::npos)
      << snap->notes.back();
}

TEST_F(EthtoolNetns, LoopbackHasNoStatisticsWhichIsNotedNotFatal) {
  auto lo = netns::run_in(ns_, [] { return read_ethtool_stats("lo"); });
  ASSERT_FALSE(lo.ok());
  EXPECT_EQ(lo.error().code(), ErrorCode::kUnsupported) << lo.error().message();
  auto snap = netns::run_in(ns_, [] { return read_counters(mlx5_fixture(), "mlx5_0", 1, "lo"); });
  ASSERT_TRUE(snap.ok()) << snap.error().message();
  EXPECT_NE(snap->notes.back().find("no Ethernet pause counters for lo"), std::string::npos)
      << snap->notes.back();
}

TEST_F(EthtoolNetns, MissingNetdevIsAClearError) {
  // The veth's name exists on the host side of nothing: only inside the namespace.
  auto outside = read_ethtool_stats(a_);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(outside.error().message().find("no netdev " + a_ + " in this network namespace"),
            std::string::npos)
      << outside.error().message();
  auto snap =
      netns::run_in(ns_, [] { return read_counters(mlx5_fixture(), "mlx5_0", 1, "fkmissing0"); });
  ASSERT_FALSE(snap.ok());
  EXPECT_EQ(snap.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(snap.error().message().find("fkmissing0"), std::string::npos);
  auto too_long = read_ethtool_stats("a-name-longer-than-15");
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code(), ErrorCode::kInvalidArgument);
}

} // namespace
} // namespace fabric::probes
