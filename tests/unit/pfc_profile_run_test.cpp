// plan, apply and verify over several devices (pfc/profile_run.h) against the fake DCB
// device: every device named appears in the JSON output, with its report or its error.
#include <gtest/gtest.h>

#include "common/json.h"
#include "common/strings.h"
#include "pfc/profile_run.h"
#include "tests/unit/fake_dcb_device.h"

namespace fabric::pfc {
namespace {

// Only DCB parts: no host knobs, so a device with DCB can be fully applied here.
DesiredConfig lossless_priority_3() {
  DesiredConfig d;
  d.pfc_en = 1 << 3;
  return d;
}

struct Rig {
  Rig() {
    device.add("eth2", mlx5_defaults());
    device.add_without_dcb("veth0");
  }
  FakeDcbDevice device;
  HostKnobs knobs{"/nonexistent-root"};
  std::vector<std::string> devs{"eth2", "eth9", "veth0"};
};

TEST(PfcProfileRun, AFailedDeviceAppearsWithItsError) {
  for (auto command : {ProfileCommand::kPlan, ProfileCommand::kApply, ProfileCommand::kVerify}) {
    SCOPED_TRACE(static_cast<int>(command));
    Rig rig;
    ProfileRun run = run_profile(command, rig.device, rig.knobs, rig.devs, lossless_priority_3());
    ASSERT_EQ(run.devices.size(), 3u);
    EXPECT_EQ(run.devices[1].exit_status, 2) << "ENODEV";
    EXPECT_EQ(run.devices[2].exit_status, 4) << "no DCB";
    // The missing device decides: "no DCB" (4) is tolerated where a NIC lacks DCB, and
    // must not hide a device that is not there.
    EXPECT_EQ(run.exit_status(), 2);

    auto text = render_profile_run_json("roce", run);
    ASSERT_TRUE(text.ok()) << text.error().message();
    auto doc = json::parse(*text, "output");
    ASSERT_TRUE(doc.ok()) << doc.error().message();
    EXPECT_EQ((*doc)["schema_version"].GetInt(), 1);
    EXPECT_EQ(std::string((*doc)["profile"].GetString()), "roce");
    const auto& devices = (*doc)["devices"];
    ASSERT_EQ(devices.Size(), 3u) << *text;
    EXPECT_EQ(std::string(devices[0]["device"].GetString()), "eth2");
    EXPECT_FALSE(devices[0].HasMember("error"));
    EXPECT_EQ(std::string(devices[1]["device"].GetString()), "eth9");
    EXPECT_NE(std::string(devices[1]["error"].GetString()).find("No such device"),
              std::string::npos)
        << *text;
    EXPECT_EQ(std::string(devices[2]["device"].GetString()), "veth0");
    EXPECT_NE(std::string(devices[2]["error"].GetString()).find("does not support DCB"),
              std::string::npos)
        << *text;
    EXPECT_TRUE(devices[2]["hint"].IsString()) << "the hint says which drivers have DCB";
  }
}

// A NIC without DCB cannot be compared, but plan still shows what the profile would set
// there, beside the reason the device cannot take it (and still exits 4).
TEST(PfcProfileRun, PlanOfADeviceWithoutDcbShowsTheDesiredState) {
  Rig rig;
  DesiredConfig desired = lossless_priority_3();
  desired.apps = {AppEntry{static_cast<uint8_t>(AppSelector::kDscp), 3, 26}};
  ProfileRun run = run_profile(ProfileCommand::kPlan, rig.device, rig.knobs, {"veth0"}, desired);
  ASSERT_EQ(run.devices.size(), 1u);
  EXPECT_EQ(run.exit_status(), 4);
  EXPECT_EQ(render_profile_run_text(run),
            "veth0: cannot take this profile (" + run.devices[0].failure->message() +
                "); it would set\n"
                "  pfc.prio_pfc: 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"
                "  app.dscp_prio: 26:3\n");
  EXPECT_NE(run.devices[0].failure->message().find("not supported"), std::string::npos);

  auto text = render_profile_run_json("roce", run);
  ASSERT_TRUE(text.ok()) << text.error().message();
  auto doc = json::parse(*text, "output");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  const auto& device = (*doc)["devices"][0];
  EXPECT_TRUE(device.HasMember("error"));
  ASSERT_TRUE(device.HasMember("desired")) << *text;
  EXPECT_STREQ(device["desired"][0]["attribute"].GetString(), "pfc.prio_pfc");
  EXPECT_STREQ(device["desired"][1]["value"].GetString(), "26:3");

  ProfileRun verify =
      run_profile(ProfileCommand::kVerify, rig.device, rig.knobs, {"veth0"}, desired);
  EXPECT_TRUE(verify.devices[0].desired.empty()) << "verify reports the error only";
}

TEST(PfcProfileRun, ApplyThenVerifyOfTheGoodDevice) {
  Rig rig;
  std::vector<std::string> one{"eth2"};
  auto applied =
      run_profile(ProfileCommand::kApply, rig.device, rig.knobs, one, lossless_priority_3());
  EXPECT_EQ(applied.exit_status(), 0) << applied.devices[0].report_text;
  EXPECT_EQ(rig.device.state("eth2").pfc->pfc_en, 8);
  auto verified =
      run_profile(ProfileCommand::kVerify, rig.device, rig.knobs, one, lossless_priority_3());
  EXPECT_EQ(verified.exit_status(), 0);
  EXPECT_FALSE(verified.devices[0].verdict);
  rig.device.state("eth2").pfc->pfc_en = 0; // drift
  auto drifted =
      run_profile(ProfileCommand::kVerify, rig.device, rig.knobs, one, lossless_priority_3());
  EXPECT_EQ(drifted.exit_status(), 3);
  ASSERT_TRUE(drifted.devices[0].verdict);
  EXPECT_NE(drifted.devices[0].verdict->message().find("pfc.prio_pfc"), std::string::npos);
}

// A report that is not JSON is a bug to report, not a null in the output.
TEST(PfcProfileRun, AnUnparsableReportIsAnError) {
  ProfileRun run;
  DeviceRun broken;
  broken.dev = "eth2";
  broken.report_json = "{\"device\": \"eth2\", ";
  run.devices.push_back(broken);
  auto text = render_profile_run_json("roce", run);
  ASSERT_FALSE(text.ok()) << *text;
  EXPECT_EQ(text.error().code(), ErrorCode::kInternal);
  EXPECT_NE(text.error().message().find("the report of eth2"), std::string::npos)
      << text.error().message();
}

// A profile's name is whatever bytes its file holds; --json stays valid UTF-8.
TEST(PfcProfileRun, JsonOutputIsValidUtf8WhateverTheProfilesNameHolds) {
  Rig rig;
  ProfileRun run =
      run_profile(ProfileCommand::kPlan, rig.device, rig.knobs, rig.devs, lossless_priority_3());
  auto text = render_profile_run_json("roce\xff\xfe-lossless", run);
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_TRUE(is_valid_utf8(*text)) << *text;
  auto doc = json::parse(*text, "output");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_STREQ((*doc)["profile"].GetString(), "roce\\xff\\xfe-lossless");
}

} // namespace
} // namespace fabric::pfc
