// PFC pause counters from the ethtool statistic names of mlx5, ice, i40e and bnxt_en, and
// the DCB netlink request/indication counters, through a fake ethtool source and the fake
// DCB device.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "exporters/pause_stat_names.h"
#include "exporters/pfc_collector.h"
#include "tests/unit/exporter/metrics_view.h"
#include "tests/unit/fake_dcb_device.h"

namespace fabric::exporters {
namespace {

using testing::collect;
using testing::value;

// `ethtool -S` as the fixture file has it: "name value" lines.
std::vector<probes::EthtoolStat> stats_of(const std::string& driver) {
  std::ifstream in(FABRIC_TEST_DATA_DIR "/exporter/ethtool/" + driver + ".txt");
  std::vector<probes::EthtoolStat> out;
  std::string name;
  uint64_t v;
  while (in >> name >> v)
    out.push_back({name, v});
  EXPECT_FALSE(out.empty()) << driver;
  return out;
}

EthtoolSource fake_ethtool(std::map<std::string, std::vector<probes::EthtoolStat>> by_netdev) {
  return [by_netdev](const std::string& netdev) -> Result<std::vector<probes::EthtoolStat>> {
    auto it = by_netdev.find(netdev);
    if (it == by_netdev.end())
      return Error::from_errno(ENODEV, "ethtool GSSET_INFO", "no netdev " + netdev);
    return it->second;
  };
}

testing::LabelMap prio(const std::string& netdev, int p, const std::string& direction) {
  return {{"netdev", netdev}, {"priority", std::to_string(p)}, {"direction", direction}};
}

testing::Collected run(const std::string& netdev, const std::string& driver) {
  PfcCollector collector(SysfsReader("/nonexistent"), {netdev},
                         fake_ethtool({{netdev, stats_of(driver)}}), nullptr);
  return collect(collector);
}

TEST(PfcCollector, Mlx5PerPriorityPauseDurationTransitionsAndStorms) {
  auto c = run("ens1f0np0", "mlx5");
  const auto& f = c.families;
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(value(f, "fabric_pfc_pause_frames_total", prio("ens1f0np0", 3, "rx")), 40);
  EXPECT_EQ(value(f, "fabric_pfc_pause_frames_total", prio("ens1f0np0", 3, "tx")), 17);
  EXPECT_EQ(value(f, "fabric_pfc_pause_frames_total", prio("ens1f0np0", 5, "tx")), 1);
  EXPECT_DOUBLE_EQ(*value(f, "fabric_pfc_pause_duration_seconds_total", prio("ens1f0np0", 3, "rx")),
                   1200e-6);
  EXPECT_EQ(value(f, "fabric_pfc_pause_transitions_total", prio("ens1f0np0", 3, "rx")), 20);
  EXPECT_EQ(value(f, "fabric_pfc_pause_storm_events_total",
                  {{"netdev", "ens1f0np0"}, {"level", "warning"}}),
            2);
  EXPECT_EQ(value(f, "fabric_pfc_pause_storm_events_total",
                  {{"netdev", "ens1f0np0"}, {"level", "error"}}),
            0);
  // Priority 0 has traffic counters but no pause counters (PFC is off there): no series.
  EXPECT_FALSE(value(f, "fabric_pfc_pause_frames_total", prio("ens1f0np0", 0, "rx")));
  EXPECT_EQ(testing::series_count(f, "fabric_pfc_pause_frames_total"), 3u)
      << "rx_pause_ctrl_phy (global pause) is not a per-priority counter";
}

TEST(PfcCollector, IceCountsXoffFramesAsPause) {
  auto c = run("ens5f0", "ice");
  EXPECT_EQ(value(c.families, "fabric_pfc_pause_frames_total", prio("ens5f0", 3, "rx")), 22);
  EXPECT_EQ(value(c.families, "fabric_pfc_pause_frames_total", prio("ens5f0", 3, "tx")), 13);
  EXPECT_EQ(value(c.families, "fabric_pfc_pause_frames_total", prio("ens5f0", 4, "rx")), 0);
  EXPECT_EQ(testing::series_count(c.families, "fabric_pfc_pause_frames_total"), 4u);
  EXPECT_EQ(testing::find_family(c.families, "fabric_pfc_pause_duration_seconds_total"), nullptr);
}

TEST(PfcCollector, I40eNamesWithThePortPrefix) {
  auto c = run("ens6f0", "i40e");
  EXPECT_EQ(value(c.families, "fabric_pfc_pause_frames_total", prio("ens6f0", 3, "rx")), 6);
  EXPECT_EQ(value(c.families, "fabric_pfc_pause_frames_total", prio("ens6f0", 3, "tx")), 4);
  EXPECT_EQ(value(c.families, "fabric_pfc_pause_transitions_total", prio("ens6f0", 3, "rx")), 7);
}

TEST(PfcCollector, BnxtFramesDurationsInMicrosecondsAndTransitions) {
  auto c = run("ens7f0np0", "bnxt_en");
  const auto& f = c.families;
  EXPECT_EQ(value(f, "fabric_pfc_pause_frames_total", prio("ens7f0np0", 3, "rx")), 31);
  EXPECT_EQ(value(f, "fabric_pfc_pause_frames_total", prio("ens7f0np0", 3, "tx")), 32);
  EXPECT_DOUBLE_EQ(*value(f, "fabric_pfc_pause_duration_seconds_total", prio("ens7f0np0", 3, "tx")),
                   800e-6);
  EXPECT_EQ(value(f, "fabric_pfc_pause_transitions_total", prio("ens7f0np0", 3, "tx")), 33);
  EXPECT_EQ(testing::series_count(f, "fabric_pfc_pause_frames_total"), 2u)
      << "rx_pfc_frames and rx_pause_frames are totals, not per priority";
}

TEST(PfcCollector, APriorityWhosePfcIsTurnedOffHasNoSeriesRatherThanZero) {
  auto stats = stats_of("mlx5");
  std::erase_if(stats, [](const probes::EthtoolStat& s) {
    return s.name.find("prio5_pause") != std::string::npos;
  });
  PfcCollector collector(SysfsReader("/nonexistent"), {"ens1f0np0"},
                         fake_ethtool({{"ens1f0np0", stats}}), nullptr);
  auto c = collect(collector);
  EXPECT_FALSE(value(c.families, "fabric_pfc_pause_frames_total", prio("ens1f0np0", 5, "tx")));
  EXPECT_EQ(value(c.families, "fabric_pfc_pause_frames_total", prio("ens1f0np0", 3, "tx")), 17);
}

TEST(PfcCollector, DcbRequestsAndIndicationsForAllEightPriorities) {
  auto dcb = std::make_unique<pfc::FakeDcbDevice>();
  pfc::DcbState state;
  state.pfc = pfc::PfcConfig{};
  state.pfc->pfc_en = 0x08;
  state.pfc->requests[3] = 100;
  state.pfc->indications[3] = 7;
  dcb->add("ens1f0np0", state);
  dcb->add_without_dcb("veth0");
  PfcCollector collector(SysfsReader("/nonexistent"), {"ens1f0np0", "veth0"},
                         fake_ethtool({{"ens1f0np0", {}}, {"veth0", {}}}), std::move(dcb));
  auto c = collect(collector);
  EXPECT_EQ(c.errors, 0u) << "veth without DCB is not an error";
  EXPECT_EQ(
      value(c.families, "fabric_pfc_requests_total", {{"netdev", "ens1f0np0"}, {"priority", "3"}}),
      100);
  EXPECT_EQ(value(c.families, "fabric_pfc_indications_total",
                  {{"netdev", "ens1f0np0"}, {"priority", "3"}}),
            7);
  EXPECT_EQ(testing::series_count(c.families, "fabric_pfc_requests_total"), 8u);
}

TEST(PfcCollector, AMissingNetdevCountsAnErrorAndTheOthersAreRead) {
  PfcCollector collector(SysfsReader("/nonexistent"), {"gone0", "ens1f0np0"},
                         fake_ethtool({{"ens1f0np0", stats_of("mlx5")}}), nullptr);
  auto c = collect(collector);
  EXPECT_EQ(c.errors, 1u);
  EXPECT_EQ(value(c.families, "fabric_pfc_pause_frames_total", prio("ens1f0np0", 3, "rx")), 40);
}

TEST(PfcCollector, DefaultNetdevsAreThoseWithADevice) {
  auto netdevs = select_netdevs(SysfsReader(FABRIC_TEST_DATA_DIR "/exporter/sysfs/mlx5"), {});
  ASSERT_TRUE(netdevs.ok());
  EXPECT_EQ(*netdevs, std::vector<std::string>{"ens1f0np0"});
  netdevs = select_netdevs(SysfsReader(FABRIC_TEST_DATA_DIR "/exporter/sysfs/rxe"), {});
  ASSERT_TRUE(netdevs.ok());
  EXPECT_TRUE(netdevs->empty()) << "eth0 in the rxe fixture has no device link";
}

TEST(PauseStatNames, OnlyPerPriorityPauseNamesMatch) {
  auto s = classify_pause_stat("rx_prio7_pause_duration");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, PauseStat::Kind::kDuration);
  EXPECT_EQ(s->priority, 7);
  EXPECT_EQ(s->direction, "rx");
  EXPECT_FALSE(classify_pause_stat("rx_prio8_pause")) << "priorities are 0-7";
  EXPECT_FALSE(classify_pause_stat("rx_prio3_pause_ctrl"));
  EXPECT_FALSE(classify_pause_stat("rx_priority_3_xon.nic")) << "XON resumes, it does not pause";
  EXPECT_FALSE(classify_pause_stat("tx_pause_ctrl_phy"));
  EXPECT_EQ(classify_pause_stat("tx_pause_storm_error_events")->kind, PauseStat::Kind::kStormError);
}

} // namespace
} // namespace fabric::exporters
