// make_plan: what differs between a device and a profile, and what would be sent.
#include <gtest/gtest.h>

#include <functional>

#include "common/json.h"
#include "pfc/plan.h"
#include "tests/unit/fake_dcb_device.h"

namespace fabric::pfc {
namespace {

const uint8_t kEtsTsa = static_cast<uint8_t>(Tsa::kEts);
const uint8_t kStrictTsa = static_cast<uint8_t>(Tsa::kStrict);

HostState host_with_ecn(uint8_t np, uint8_t rp) {
  HostState h;
  h.ecn_np = np;
  h.ecn_rp = rp;
  return h;
}

// An mlx5 port on which the RoCE profile has already been applied.
DcbState roce_state() {
  DcbState s = mlx5_defaults();
  DesiredConfig d = roce_profile();
  s.pfc->pfc_en = *d.pfc_en;
  s.ets->prio_tc = *d.prio_tc;
  s.ets->tc_tx_bw = *d.tc_bw;
  s.ets->tc_tsa = *d.tc_tsa;
  s.apps = {dscp(26, 3), dscp(48, 6)};
  return s;
}

Plan plan_or_die(const DcbState& state, const HostState& host, const DesiredConfig& desired) {
  auto plan = make_plan("eth2", state, host, desired);
  EXPECT_TRUE(plan.ok()) << plan.error().message();
  return plan.ok() ? std::move(*plan) : Plan{};
}

TEST(PfcPlan, MatchingDeviceIsInSyncAndSendsNothing) {
  Plan plan = plan_or_die(roce_state(), host_with_ecn(8, 8), roce_profile());
  EXPECT_TRUE(plan.in_sync());
  EXPECT_TRUE(plan.change.empty());
  EXPECT_FALSE(plan.host_change.has_any());
  EXPECT_TRUE(plan.unavailable.empty());
  EXPECT_EQ(render_plan_text(plan), "eth2: in sync\n");
}

TEST(PfcPlan, FreshMlx5PortNeedsTheWholeRoceProfile) {
  Plan plan = plan_or_die(mlx5_defaults(), host_with_ecn(0, 0), roce_profile());
  std::vector<std::string> attributes;
  for (const auto& d : plan.differences)
    attributes.push_back(d.attribute);
  EXPECT_EQ(attributes,
            (std::vector<std::string>{"pfc.prio_pfc", "ets.prio_tc", "ets.tc_bw", "ets.tc_tsa",
                                      "app.dscp_prio", "ecn.roce_np", "ecn.roce_rp"}));
  EXPECT_EQ(attributes, attributes_named_by(roce_profile()));
  EXPECT_EQ(render_plan_text(plan).substr(0, 32), "eth2: 7 differences\n  pfc.prio_p");
  // Only the parts that differ are sent.
  EXPECT_TRUE(plan.change.pfc && plan.change.ets);
  EXPECT_FALSE(plan.change.buffer || plan.change.maxrate || plan.change.dcbx);
  EXPECT_EQ(plan.change.app_add, (std::vector<AppEntry>{dscp(26, 3), dscp(48, 6)}));
  EXPECT_TRUE(plan.change.app_del.empty());
  EXPECT_EQ(plan.host_change.ecn_np, 8);
}

// Each attribute, alone in a profile, against a fresh mlx5 port, rendered as dcb does.
struct RenderCase {
  std::string attribute;
  std::function<void(DesiredConfig&)> set;
  std::string current;
  std::string desired;
};

TEST(PfcPlan, EachAttributeIsRenderedLikeDcb) {
  const std::vector<RenderCase> cases = {
      {"pfc.prio_pfc", [](auto& d) { d.pfc_en = 1 << 3; },
       "0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off",
       "0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"},
      {"pfc.delay", [](auto& d) { d.pfc_delay = 32; }, "0", "32"},
      {"ets.willing", [](auto& d) { d.ets_willing = true; }, "off", "on"},
      {"ets.prio_tc", [](auto& d) { d.prio_tc = roce_profile().prio_tc; },
       "0:1 1:0 2:2 3:3 4:4 5:5 6:6 7:7", "0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0"},
      {"ets.tc_bw", [](auto& d) { d.tc_bw = roce_profile().tc_bw; },
       "0:13 1:13 2:13 3:13 4:12 5:12 6:12 7:12", "0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0"},
      {"ets.tc_tsa", [](auto& d) { d.tc_tsa = roce_profile().tc_tsa; },
       "0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:ets 7:ets",
       "0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets"},
      {"app.dscp_prio",
       [](auto& d) {
         d.apps = {dscp(48, 6), dscp(26, 3)};
       },
       "none", "26:3 48:6"},
      {"app.ethtype_prio",
       [](auto& d) {
         d.apps = {AppEntry{1, 3, 0x8915}};
       },
       "none", "0x8915:3"},
      {"buffer.prio_buffer",
       [](auto& d) {
         d.prio2buffer = PerPriority<uint8_t>{0, 0, 0, 1};
       },
       "0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0", "0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0"},
      {"buffer.buffer_size",
       [](auto& d) {
         d.buffer_size = std::array<uint32_t, 8>{131072, 131072};
       },
       "0:262016 1:0 2:0 3:0 4:0 5:0 6:0 7:0", "0:131072 1:131072 2:0 3:0 4:0 5:0 6:0 7:0"},
      {"maxrate.tc_maxrate",
       [](auto& d) { d.tc_maxrate = PerTc<uint64_t>{0, 0, 0, 25000000, 0, 0, 500000, 1}; },
       "0:unlimited 1:unlimited 2:unlimited 3:unlimited 4:unlimited 5:unlimited 6:unlimited "
       "7:unlimited",
       "0:unlimited 1:unlimited 2:unlimited 3:25Gbit 4:unlimited 5:unlimited 6:500Mbit 7:1kbit"},
      {"ecn.roce_np", [](auto& d) { d.ecn_np = 1 << 3; },
       "0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off",
       "0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"},
      {"rdma.cm_default_tos", [](auto& d) { d.cm_default_tos = 106; }, "0", "106"},
      {"rdma.cm_default_roce_mode", [](auto& d) { d.cm_default_roce_mode = "RoCE v2"; },
       "IB/RoCE v1", "RoCE v2"},
      {"rdma.traffic_class", [](auto& d) { d.rdma_traffic_class = 106; }, "0", "106"},
  };
  HostState host = host_with_ecn(0, 0);
  host.rdma_device = "mlx5_0";
  host.cm_default_tos = 0;
  host.cm_default_roce_mode = "IB/RoCE v1";
  host.rdma_traffic_class = 0;
  for (const auto& c : cases) {
    DesiredConfig desired;
    c.set(desired);
    Plan plan = plan_or_die(mlx5_defaults(), host, desired);
    ASSERT_EQ(plan.differences.size(), 1u) << c.attribute << "\n" << render_plan_text(plan);
    const Difference& d = plan.differences[0];
    EXPECT_EQ(d.attribute, c.attribute);
    EXPECT_EQ(d.current, c.current) << c.attribute;
    EXPECT_EQ(d.desired, c.desired) << c.attribute;
    EXPECT_EQ(render_plan_text(plan), "eth2: 1 difference\n  " + c.attribute + ": " + c.current +
                                          " -> " + c.desired + "\n");
  }
}

TEST(PfcPlan, EtsChangeKeepsWhatTheProfileDoesNotName) {
  DesiredConfig desired;
  desired.tc_bw = PerTc<uint8_t>{50, 0, 0, 50, 0, 0, 0, 0};
  DcbState current = mlx5_defaults();
  current.ets->willing = 1;
  Plan plan = plan_or_die(current, {}, desired);
  ASSERT_TRUE(plan.change.ets.has_value());
  const EtsConfig& sent = *plan.change.ets;
  EXPECT_EQ(sent.tc_tx_bw, *desired.tc_bw);
  // Everything else is the device's own, not zeros: the kernel replaces the whole struct.
  EXPECT_EQ(sent.prio_tc, current.ets->prio_tc);
  EXPECT_EQ(sent.tc_tsa, current.ets->tc_tsa);
  EXPECT_EQ(sent.willing, 1);
  EXPECT_EQ(sent.ets_cap, 8);
  EXPECT_EQ(sent.tc_reco_bw, current.ets->tc_reco_bw);
  EXPECT_FALSE(plan.change.pfc.has_value());
}

TEST(PfcPlan, PfcChangeKeepsTheDeviceCapabilityAndDelay) {
  DesiredConfig desired;
  desired.pfc_en = 1 << 3;
  DcbState current = mlx5_defaults();
  current.pfc->delay = 4096;
  Plan plan = plan_or_die(current, {}, desired);
  ASSERT_TRUE(plan.change.pfc.has_value());
  EXPECT_EQ(plan.change.pfc->pfc_en, 8);
  EXPECT_EQ(plan.change.pfc->pfc_cap, 8);
  EXPECT_EQ(plan.change.pfc->delay, 4096);
  EXPECT_FALSE(plan.change.ets.has_value());
}

TEST(PfcPlan, AppsAreAddedAndStaleOnesOfTheSameSelectorDeleted) {
  DcbState current = mlx5_defaults();
  const AppEntry roce_ethertype{static_cast<uint8_t>(AppSelector::kEthertype), 3, 0x8915};
  current.apps = {dscp(26, 0), dscp(48, 6), dscp(10, 1), roce_ethertype};
  DesiredConfig desired;
  desired.apps = {dscp(26, 3), dscp(48, 6)};

  Plan plan = plan_or_die(current, {}, desired);
  EXPECT_EQ(plan.change.app_add, std::vector<AppEntry>{dscp(26, 3)});
  // The stale 26 -> 0 and the unlisted 10 -> 1 go; the ethertype entry is another
  // selector, which the profile does not own.
  EXPECT_EQ(plan.change.app_del, (std::vector<AppEntry>{dscp(26, 0), dscp(10, 1)}));
  ASSERT_EQ(plan.differences.size(), 1u);
  EXPECT_EQ(plan.differences[0].attribute, "app.dscp_prio");
  EXPECT_EQ(plan.differences[0].current, "10:1 26:0 48:6");
  EXPECT_EQ(plan.differences[0].desired, "26:3 48:6");

  desired.apps_exclusive = false;
  Plan additive = plan_or_die(current, {}, desired);
  EXPECT_EQ(additive.change.app_add, std::vector<AppEntry>{dscp(26, 3)});
  EXPECT_TRUE(additive.change.app_del.empty());
  EXPECT_EQ(additive.differences[0].desired, "10:1 26:0 26:3 48:6");
}

TEST(PfcPlan, PresentAppsAreNotSentAgain) {
  DcbState current = mlx5_defaults();
  current.apps = {dscp(26, 3), dscp(48, 6)};
  DesiredConfig desired;
  desired.apps = {dscp(26, 3)};
  desired.apps_exclusive = false;
  Plan plan = plan_or_die(current, {}, desired);
  EXPECT_TRUE(plan.in_sync());
  EXPECT_TRUE(plan.change.empty());
}

TEST(PfcPlan, PartsTheDeviceDoesNotExposeAreReportedNotDropped) {
  DcbState current = mlx5_defaults();
  current.pfc.reset();
  current.buffer.reset();
  current.maxrate.reset();
  DesiredConfig desired;
  desired.pfc_en = 1 << 3;
  desired.buffer_size = std::array<uint32_t, 8>{};
  desired.tc_maxrate = PerTc<uint64_t>{};
  desired.ecn_np = 1 << 3;
  desired.cm_default_tos = 106;
  HostState host; // no ECN files, no RDMA device

  Plan plan = plan_or_die(current, host, desired);
  EXPECT_TRUE(plan.in_sync()); // nothing the device exposes differs...
  EXPECT_TRUE(plan.change.empty());
  ASSERT_EQ(plan.unavailable.size(), 5u); // ...but nothing is silently skipped either
  EXPECT_EQ(plan.unavailable[0],
            "pfc: the device does not report PFC (its driver has no IEEE PFC support)");
  EXPECT_EQ(plan.unavailable[1].substr(0, 44), "buffer: the device does not report port buff");
  EXPECT_EQ(plan.unavailable[2].substr(0, 50),
            "maxrate: the device does not report per-TC rate li");
  EXPECT_EQ(plan.unavailable[3], "ecn.roce_np: not available on this host (no "
                                 "/sys/class/net/eth2/ecn/roce_np; the mlx5 driver provides it)");
  EXPECT_EQ(plan.unavailable[4], "rdma.cm_default_tos: not available on this host (eth2 has no "
                                 "RDMA device; name one with rdma_device)");
  std::string text = render_plan_text(plan);
  EXPECT_NE(text.find("eth2: in sync\n  not available: pfc: the device does not report PFC"),
            std::string::npos)
      << text;
}

TEST(PfcPlan, EtsMissingIsOneEntryForTheGroup) {
  DcbState current = mlx5_defaults();
  current.ets.reset();
  Plan plan = plan_or_die(current, host_with_ecn(8, 8), roce_profile());
  EXPECT_EQ(plan.unavailable,
            std::vector<std::string>{
                "ets: the device does not report ETS (its driver has no IEEE ETS support)"});
  EXPECT_FALSE(plan.change.ets.has_value());
  EXPECT_TRUE(plan.change.pfc.has_value());
}

TEST(PfcPlan, ImpossibleValuesAreConfigErrorsNamingTheAttribute) {
  DesiredConfig desired;
  desired.prio_tc = PerPriority<uint8_t>{0, 0, 0, 9};
  auto plan = make_plan("eth2", mlx5_defaults(), {}, desired);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code(), ErrorCode::kInvalidConfig);
  EXPECT_EQ(plan.error().message(),
            "ets.prio_tc: priority 3 maps to traffic class 9; traffic classes are 0-7");

  DesiredConfig bad_dscp;
  bad_dscp.apps = {dscp(64, 3)};
  auto app = make_plan("eth2", mlx5_defaults(), {}, bad_dscp);
  ASSERT_FALSE(app.ok());
  EXPECT_EQ(app.error().message(), "app.dscp_prio: entry 64:3: DSCP values are 0-63");

  DesiredConfig bad_tsa;
  bad_tsa.tc_tsa = PerTc<uint8_t>{kEtsTsa, 7, kStrictTsa};
  EXPECT_EQ(make_plan("eth2", mlx5_defaults(), {}, bad_tsa).error().code(),
            ErrorCode::kInvalidConfig);
}

TEST(PfcPlan, JsonCarriesDifferencesAndUnavailableParts) {
  DcbState current = mlx5_defaults();
  current.maxrate.reset();
  DesiredConfig desired;
  desired.pfc_en = 1 << 3;
  desired.tc_maxrate = PerTc<uint64_t>{};
  Plan plan = plan_or_die(current, {}, desired);
  auto doc = json::parse(render_plan_json(plan), "plan");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ((*doc)["schema_version"].GetInt(), 1);
  EXPECT_EQ(std::string((*doc)["device"].GetString()), "eth2");
  EXPECT_FALSE((*doc)["in_sync"].GetBool());
  const auto& diffs = (*doc)["differences"];
  ASSERT_EQ(diffs.Size(), 1u);
  EXPECT_EQ(std::string(diffs[0]["attribute"].GetString()), "pfc.prio_pfc");
  EXPECT_EQ(std::string(diffs[0]["desired"].GetString()),
            "0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off");
  ASSERT_EQ((*doc)["unavailable"].Size(), 1u);
  EXPECT_EQ(std::string((*doc)["unavailable"][0].GetString()).substr(0, 9), "maxrate: ");
}

} // namespace
} // namespace fabric::pfc
