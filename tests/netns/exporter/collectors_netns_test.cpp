// The PFC and DCB collectors against the real kernel on a veth: the ethtool ioctl answers
// with no pause statistics, and DCB netlink with EOPNOTSUPP, which the DCB collector reports
// as fabric_dcb_supported 0 rather than as an error.
#include <gtest/gtest.h>

#include "common/netns.h"
#include "exporters/dcb_collector.h"
#include "exporters/pfc_collector.h"
#include "libs/dcb/dcb_netlink.h"
#include "tests/netns/test_network.h"
#include "tests/unit/exporter/metrics_view.h"

namespace fabric::exporters {
namespace {

using testing::value;

class CollectorsNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fabric::testing::can_manage_network()) GTEST_SKIP() << fabric::testing::skip_reason();
    ns_ = net_.add_namespace("dcb");
    std::tie(a_, b_) = net_.add_veth("d", net_.ns_name("dcb"), net_.ns_name("dcb"));
    ASSERT_FALSE(a_.empty());
  }
  fabric::testing::TestNetwork net_;
  std::string ns_, a_, b_;
};

TEST_F(CollectorsNetns, DcbOnAVethIsUnsupportedNotAnError) {
  auto run = netns::run_in(ns_, [&]() -> Result<testing::Collected> {
    DcbCollector collector(SysfsReader("/sys"), {a_}, pfc::make_netlink_dcb_device());
    return testing::collect(collector);
  });
  ASSERT_TRUE(run.ok()) << run.error().message();
  const auto& c = *run;
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.errors, 0u) << (c.messages.empty() ? "" : c.messages[0]);
  EXPECT_EQ(value(c.families, "fabric_dcb_supported", {{"netdev", a_}}), 0);
  EXPECT_EQ(testing::find_family(c.families, "fabric_dcb_config_info"), nullptr);
}

TEST_F(CollectorsNetns, ANetdevThatDoesNotExistIsAnError) {
  auto run = netns::run_in(ns_, [&]() -> Result<testing::Collected> {
    DcbCollector collector(SysfsReader("/sys"), {"nosuch0"}, pfc::make_netlink_dcb_device());
    return testing::collect(collector);
  });
  ASSERT_TRUE(run.ok()) << run.error().message();
  const auto& c = *run;
  EXPECT_EQ(c.errors, 1u);
  EXPECT_FALSE(value(c.families, "fabric_dcb_supported", {{"netdev", "nosuch0"}}));
}

TEST_F(CollectorsNetns, PfcOnAVethReadsTheIoctlAndFindsNoPauseCounters) {
  auto run = netns::run_in(ns_, [&]() -> Result<testing::Collected> {
    PfcCollector collector(SysfsReader("/sys"), {a_}, probes::read_ethtool_stats,
                           pfc::make_netlink_dcb_device());
    return testing::collect(collector);
  });
  ASSERT_TRUE(run.ok()) << run.error().message();
  const auto& c = *run;
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.errors, 0u) << (c.messages.empty() ? "" : c.messages[0]);
  EXPECT_EQ(testing::find_family(c.families, "fabric_pfc_pause_frames_total"), nullptr);
  EXPECT_EQ(testing::find_family(c.families, "fabric_pfc_requests_total"), nullptr);
}

} // namespace
} // namespace fabric::exporters
