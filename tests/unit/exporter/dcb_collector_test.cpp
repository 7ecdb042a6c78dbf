// The DCB collector over the fake DCB device (which answers as the kernel's dcbnl does):
// PFC, ETS, DSCP map and the configuration hash; a device without DCB is "unsupported".
#include <gtest/gtest.h>

#include "exporters/dcb_collector.h"
#include "exporters/dcb_summary.h"
#include "tests/unit/exporter/metrics_view.h"
#include "tests/unit/fake_dcb_device.h"

namespace fabric::exporters {
namespace {

using testing::collect;
using testing::value;

// A RoCE profile as `fabric-pfc apply` leaves it: PFC on 3, DSCP 26 -> 3 and 48 -> 6,
// TC3 50% / TC0 50% ETS, TC6 strict.
pfc::DcbState roce_lossless() {
  pfc::DcbState s = pfc::mlx5_defaults();
  s.pfc->pfc_en = 0x08;
  s.ets->prio_tc = {0, 0, 0, 3, 0, 0, 6, 0};
  s.ets->tc_tx_bw = {50, 0, 0, 50, 0, 0, 0, 0};
  s.ets->tc_tsa = {2, 2, 2, 2, 2, 2, 0, 2};
  s.apps = {{5, 3, 26}, {5, 6, 48}};
  s.dcbx = 0x0c; // host, IEEE
  return s;
}

testing::Collected run(std::unique_ptr<pfc::FakeDcbDevice> dcb, std::vector<std::string> netdevs) {
  DcbCollector collector(SysfsReader("/nonexistent"), std::move(netdevs), std::move(dcb));
  return collect(collector);
}

TEST(DcbCollector, ReportsLosslessPrioritiesEtsAndTheDscpMap) {
  auto dcb = std::make_unique<pfc::FakeDcbDevice>();
  dcb->add("ens1f0np0", roce_lossless());
  auto c = run(std::move(dcb), {"ens1f0np0"});
  const auto& f = c.families;
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(value(f, "fabric_dcb_supported", {{"netdev", "ens1f0np0"}}), 1);
  EXPECT_EQ(value(f, "fabric_dcb_pfc_enabled", {{"netdev", "ens1f0np0"}, {"priority", "3"}}), 1);
  EXPECT_EQ(value(f, "fabric_dcb_pfc_enabled", {{"netdev", "ens1f0np0"}, {"priority", "4"}}), 0);
  EXPECT_EQ(
      value(f, "fabric_dcb_priority_traffic_class", {{"netdev", "ens1f0np0"}, {"priority", "6"}}),
      6);
  EXPECT_EQ(value(f, "fabric_dcb_ets_bandwidth_ratio",
                  {{"netdev", "ens1f0np0"}, {"tc", "3"}, {"tsa", "ets"}}),
            0.5);
  EXPECT_EQ(value(f, "fabric_dcb_ets_bandwidth_ratio",
                  {{"netdev", "ens1f0np0"}, {"tc", "6"}, {"tsa", "strict"}}),
            0);
  EXPECT_EQ(value(f, "fabric_dcb_dscp_priority", {{"netdev", "ens1f0np0"}, {"dscp", "26"}}), 3);
  EXPECT_EQ(value(f, "fabric_dcb_dscp_priority", {{"netdev", "ens1f0np0"}, {"dscp", "48"}}), 6);
  EXPECT_EQ(value(f, "fabric_dcb_app_entries", {{"netdev", "ens1f0np0"}, {"selector", "dscp"}}), 2);
  EXPECT_EQ(value(f, "fabric_dcb_config_info",
                  {{"netdev", "ens1f0np0"}, {"hash", dcb_config_hash(roce_lossless())}}),
            1);
}

TEST(DcbCollector, ANetdevWithoutDcbIsUnsupportedNotAnError) {
  auto dcb = std::make_unique<pfc::FakeDcbDevice>();
  dcb->add_without_dcb("veth0");
  auto c = run(std::move(dcb), {"veth0"});
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(value(c.families, "fabric_dcb_supported", {{"netdev", "veth0"}}), 0);
  EXPECT_EQ(testing::find_family(c.families, "fabric_dcb_config_info"), nullptr);
}

TEST(DcbCollector, AMissingNetdevIsAnError) {
  auto c = run(std::make_unique<pfc::FakeDcbDevice>(), {"gone0"});
  EXPECT_EQ(c.errors, 1u);
  EXPECT_FALSE(value(c.families, "fabric_dcb_supported", {{"netdev", "gone0"}}));
}

TEST(DcbConfigHash, IsStableAndIgnoresCountersAndThePeer) {
  const pfc::DcbState base = roce_lossless();
  const std::string hash = dcb_config_hash(base);
  EXPECT_EQ(hash.size(), 16u);
  EXPECT_EQ(hash, "b50048166c63f49b") << "a hash that changes between builds finds no odd node:\n"
                                      << canonical_dcb_text(base);
  pfc::DcbState counted = base;
  counted.pfc->requests[3] = 12345;
  counted.pfc->indications[3] = 6;
  counted.peer_pfc = pfc::PfcConfig{};
  EXPECT_EQ(dcb_config_hash(counted), hash);
  pfc::DcbState reordered = base;
  std::reverse(reordered.apps.begin(), reordered.apps.end());
  std::sort(reordered.apps.begin(), reordered.apps.end()); // the model keeps them sorted
  EXPECT_EQ(dcb_config_hash(reordered), hash);

  pfc::DcbState other = base;
  other.pfc->pfc_en = 0x18;
  EXPECT_NE(dcb_config_hash(other), hash);
  other = base;
  other.apps.push_back({5, 3, 24});
  std::sort(other.apps.begin(), other.apps.end());
  EXPECT_NE(dcb_config_hash(other), hash);
  other = base;
  other.ets->tc_tx_bw = {40, 0, 0, 60, 0, 0, 0, 0};
  EXPECT_NE(dcb_config_hash(other), hash);
}

} // namespace
} // namespace fabric::exporters
