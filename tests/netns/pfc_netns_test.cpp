// fabric-pfc against the real kernel's DCB netlink on a veth: the kernel answers
// EOPNOTSUPP (no dcbnl ops), ENODEV for a missing device; watch joins the DCB multicast
// group and stops cleanly on SIGTERM.
#include <gtest/gtest.h>

#include "common/json.h"
#include "common/netns.h"
#include "common/subprocess.h"
#include "libs/dcb/dcb_netlink.h"
#include "tests/netns/test_network.h"

namespace fabric {
namespace {

using testing::TestNetwork;

class PfcNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!testing::can_manage_network()) GTEST_SKIP() << testing::skip_reason();
    ns_path_ = net_.add_namespace("dcb");
    dev_ = net_.add_veth("d", net_.ns_name("dcb"), net_.ns_name("dcb")).first;
  }

  Result<SubprocessResult> pfc(std::vector<std::string> args) {
    args.insert(args.begin(), {"ip", "netns", "exec", net_.ns_name("dcb"), FABRIC_PFC_BINARY});
    return run_subprocess(args);
  }

  TestNetwork net_;
  std::string ns_path_;
  std::string dev_;
};

TEST_F(PfcNetns, LibraryReadOnVethIsUnsupported) {
  auto state = netns::run_in(ns_path_, [&] { return pfc::make_netlink_dcb_device()->read(dev_); });
  ASSERT_FALSE(state.ok());
  EXPECT_EQ(state.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(state.error().sys_errno(), EOPNOTSUPP);
  EXPECT_NE(state.error().hint().find("does not support DCB"), std::string::npos);
}

TEST_F(PfcNetns, LibraryWriteOnVethIsUnsupportedAndChangesNothing) {
  pfc::DcbChange change;
  pfc::PfcConfig wanted;
  wanted.pfc_en = 1 << 3;
  change.pfc = wanted;
  auto written =
      netns::run_in(ns_path_, [&] { return pfc::make_netlink_dcb_device()->write(dev_, change); });
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error().code(), ErrorCode::kUnsupported);
}

TEST_F(PfcNetns, ShowOnVethSaysNoDcbSupportWithExit4) {
  for (bool json : {false, true}) {
    std::vector<std::string> args = {"show", dev_};
    if (json) args.push_back("--json");
    auto r = pfc(args);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_status, 4) << r->stderr_text;
    EXPECT_NE(r->stderr_text.find(dev_ + " does not support DCB"), std::string::npos)
        << r->stderr_text;
    if (!json) {
      EXPECT_TRUE(r->stdout_text.empty());
      continue;
    }
    // As plan --json: an error document on stdout for the script reading it.
    auto doc = json::parse(r->stdout_text, "stdout");
    ASSERT_TRUE(doc.ok()) << doc.error().message() << "\n" << r->stdout_text;
    EXPECT_EQ(std::string((*doc)["device"].GetString()), dev_);
    EXPECT_NE(std::string((*doc)["error"].GetString()).find("not supported"), std::string::npos);
    ASSERT_TRUE((*doc)["hint"].IsString());
    EXPECT_NE(std::string((*doc)["hint"].GetString()).find("does not support DCB"),
              std::string::npos);
  }
}

TEST_F(PfcNetns, ApplyPlanVerifyAndSetOnVethChangeNothingAndExit4) {
  const std::string profile = FABRIC_SOURCE_DIR "/deploy/pfc/roce-lossless.yaml";
  for (const char* command : {"plan", "apply", "verify"}) {
    auto r = pfc({command, dev_, "--profile", profile});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_status, 4) << command << ": " << r->stderr_text;
    EXPECT_NE(r->stderr_text.find("does not support DCB"), std::string::npos) << r->stderr_text;
  }
  // plan still shows what the profile would set there.
  auto plan = pfc({"plan", dev_, "--profile", profile});
  ASSERT_TRUE(plan.ok());
  EXPECT_NE(plan->stdout_text.find(dev_ + ": cannot take this profile"), std::string::npos)
      << plan->stdout_text;
  EXPECT_NE(plan->stdout_text.find("  pfc.prio_pfc: "), std::string::npos) << plan->stdout_text;
  auto set = pfc({"set", dev_, "--prio-pfc", "3:on"});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->exit_status, 4) << set->stderr_text;
  EXPECT_TRUE(set->stdout_text.empty());
}

// The kernel's refusals, one per device, all in the JSON output: a script that asked
// about three devices reads three entries.
TEST_F(PfcNetns, ApplyJsonOverSeveralDevicesListsEachWithItsError) {
  const std::string other = net_.add_veth("e", net_.ns_name("dcb"), net_.ns_name("dcb")).first;
  const std::string profile = FABRIC_SOURCE_DIR "/deploy/pfc/roce-lossless.yaml";
  for (const char* command : {"apply", "plan", "verify"}) {
    SCOPED_TRACE(command);
    auto r = pfc({command, dev_, other, "fk-no-such-dev", "--profile", profile, "--json"});
    ASSERT_TRUE(r.ok());
    // The missing device decides the status: "no DCB" (4) on the veths must not hide it.
    EXPECT_EQ(r->exit_status, 2) << r->stderr_text;
    auto doc = json::parse(r->stdout_text, "stdout");
    ASSERT_TRUE(doc.ok()) << doc.error().message() << "\n" << r->stdout_text;
    const auto& devices = (*doc)["devices"];
    ASSERT_EQ(devices.Size(), 3u) << r->stdout_text;
    const std::string names[] = {dev_, other, "fk-no-such-dev"};
    for (rapidjson::SizeType i = 0; i < 3; ++i) {
      EXPECT_EQ(std::string(devices[i]["device"].GetString()), names[i]);
      ASSERT_TRUE(devices[i].HasMember("error") && devices[i]["error"].IsString())
          << r->stdout_text;
    }
    EXPECT_NE(std::string(devices[0]["error"].GetString()).find("does not support DCB"),
              std::string::npos);
    EXPECT_NE(std::string(devices[2]["error"].GetString()).find("No such device"),
              std::string::npos);
  }
}

TEST_F(PfcNetns, MissingDeviceIsENODEVWithExit2) {
  auto r = pfc({"show", "fk-no-such-dev"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 2);
  EXPECT_NE(r->stderr_text.find("no network device fk-no-such-dev"), std::string::npos)
      << r->stderr_text;
  EXPECT_NE(r->stderr_text.find("No such device"), std::string::npos);
  auto watch = pfc({"watch", "fk-no-such-dev"});
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ(watch->exit_status, 2);
}

TEST_F(PfcNetns, WatchStartsAndStopsCleanlyOnSigterm) {
  // timeout sends SIGTERM after 1 s; --preserve-status passes on fabric-pfc's own status,
  // which must be 0: it noticed the signal and left its poll loop.
  auto r = run_subprocess({"ip", "netns", "exec", net_.ns_name("dcb"), "timeout",
                           "--preserve-status", "-s", "TERM", "1", FABRIC_PFC_BINARY, "watch"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 0) << r->stderr_text;
  EXPECT_NE(r->stderr_text.find("watching DCB changes on every device"), std::string::npos);
  EXPECT_TRUE(r->stdout_text.empty());
}

// A device without DCB never sends a DCB notification: watch says so and exits 4 at once
// instead of waiting in silence (timeout's 10 s is only the test's bound).
TEST_F(PfcNetns, WatchOnADeviceWithoutDcbSaysNoChangeCanCome) {
  auto r = run_subprocess({"ip", "netns", "exec", net_.ns_name("dcb"), "timeout", "-s", "KILL",
                           "10", FABRIC_PFC_BINARY, "watch", dev_});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 4) << r->stderr_text;
  EXPECT_NE(r->stderr_text.find("no DCB change can come from " + dev_), std::string::npos)
      << r->stderr_text;
  EXPECT_TRUE(r->stdout_text.empty());
}

} // namespace
} // namespace fabric
