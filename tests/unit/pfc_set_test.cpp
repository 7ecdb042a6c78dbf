// `fabric-pfc set`: dcb-style items become a DesiredConfig relative to the device, and go
// through apply's read-back like a profile.
#include <gtest/gtest.h>

#include "pfc/apply.h"
#include "pfc/set_request.h"
#include "tests/unit/fake_dcb_device.h"

namespace fabric::pfc {
namespace {

TEST(PfcSet, ItemsModifyTheCurrentValuesOnly) {
  DcbState current = mlx5_defaults();
  current.pfc->pfc_en = 1 << 5;
  SetRequest request;
  request.prio_pfc = {"3:on", "5:off"};
  request.prio_tc = {"all:0", "3:3"};
  request.tc_bw = {"0:50", "3:50"};
  request.dscp_prio = {"26:3"};
  auto desired = desired_from_set(request, current);
  ASSERT_TRUE(desired.ok()) << desired.error().message();
  EXPECT_EQ(desired->pfc_en, 1 << 3);
  EXPECT_EQ(desired->prio_tc, (PerPriority<uint8_t>{0, 0, 0, 3, 0, 0, 0, 0}));
  // TCs not named keep the device's shares.
  EXPECT_EQ((*desired->tc_bw)[0], 50);
  EXPECT_EQ((*desired->tc_bw)[3], 50);
  EXPECT_EQ((*desired->tc_bw)[1], current.ets->tc_tx_bw[1]);
  EXPECT_FALSE(desired->tc_tsa.has_value());
  EXPECT_EQ(desired->apps, (std::vector<AppEntry>{{5, 3, 26}}));
  EXPECT_FALSE(desired->apps_exclusive);
}

TEST(PfcSet, BadItemsNameTheOptionAndTheItem) {
  DcbState current = mlx5_defaults();
  struct Case {
    SetRequest request;
    std::string message;
  } cases[] = {
      {{.prio_pfc = {"9:on"}}, "--prio-pfc 9:on: priority 9 is out of range (0-7)"},
      {{.prio_pfc = {"3:yes"}}, "--prio-pfc 3:yes: expected on or off, not 'yes'"},
      {{.prio_pfc = {"3"}}, "--prio-pfc 3: expected KEY:VALUE"},
      {{.tc_bw = {"0:101"}}, "--tc-bw 0:101: share 101 is out of range (0-100)"},
      {{.tc_tsa = {"0:fast"}}, "--tc-tsa 0:fast: expected strict, cbs, ets or vendor"},
      {{.dscp_prio = {"64:3"}}, "--dscp-prio 64:3: DSCP 64 is out of range (0-63)"},
      {{.prio_tc = {"x:1"}}, "--prio-tc x:1: priority 'x' is not a number"},
  };
  for (const auto& c : cases) {
    auto desired = desired_from_set(c.request, current);
    ASSERT_FALSE(desired.ok()) << c.message;
    EXPECT_EQ(desired.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(desired.error().message(), c.message);
  }
}

TEST(PfcSet, ChangingWhatTheDeviceDoesNotReportIsUnsupported) {
  DcbState current = mlx5_defaults();
  current.ets.reset();
  auto desired = desired_from_set({.tc_bw = {"0:100"}}, current);
  ASSERT_FALSE(desired.ok());
  EXPECT_EQ(desired.error().code(), ErrorCode::kUnsupported);
}

TEST(PfcSet, AppliesThroughTheDeviceAndReadsBack) {
  FakeDcbDevice device;
  device.add("eth2", mlx5_defaults());
  HostKnobs knobs("/nonexistent-root");
  SetRequest request;
  request.prio_pfc = {"3:on"};
  request.dscp_prio = {"26:3"};
  auto desired = desired_from_set(request, *device.read("eth2"));
  ASSERT_TRUE(desired.ok());
  auto report = apply_profile(device, knobs, "eth2", *desired);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->fully_applied()) << render_apply_text(*report);
  EXPECT_EQ(device.writes(), 1);
  EXPECT_EQ(device.state("eth2").pfc->pfc_en, 1 << 3);
  EXPECT_EQ(device.state("eth2").apps, (std::vector<AppEntry>{{5, 3, 26}}));
}

} // namespace
} // namespace fabric::pfc
