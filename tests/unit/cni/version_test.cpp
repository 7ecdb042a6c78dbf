// Which spec versions fabric-cni speaks, how they order and which commands they allow.
#include <gtest/gtest.h>

#include "cni/version.h"

namespace fabric::cni {
namespace {

TEST(CniVersion, SupportsExactlyTheResultVersionsSince030) {
  EXPECT_EQ(supported_versions(),
            (std::vector<std::string>{"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}));
  EXPECT_EQ(supported_versions().back(), kLatestVersion);
}

TEST(CniVersion, UnsupportedVersionIsCode1NamingIt) {
  for (const char* v : {"0.1.0", "0.2.0", "1.2.0", "2.0.0", "1.0", "banana"}) {
    auto r = check_supported(v);
    ASSERT_FALSE(r.ok()) << v;
    EXPECT_EQ(r.error().code(), ErrorCode::kIncompatibleVersion);
    EXPECT_EQ(cni_code_for(r.error().code()), 1);
    EXPECT_NE(r.error().message().find(std::string("'") + v + "'"), std::string::npos);
    EXPECT_NE(r.error().message().find("1.1.0"), std::string::npos) << "lists what works";
  }
  EXPECT_TRUE(check_supported("0.4.0").ok());
}

TEST(CniVersion, OrdersNumericallyLikeLibcni) {
  EXPECT_LT(compare_versions("0.3.1", "0.4.0"), 0);
  EXPECT_GT(compare_versions("1.1.0", "1.0.0"), 0);
  EXPECT_GT(compare_versions("1.10.0", "1.9.0"), 0) << "not a string comparison";
  EXPECT_EQ(compare_versions("1.1", "1.1.0"), 0) << "missing parts are zero";
  EXPECT_EQ(compare_versions("", "0.1.0"), 0) << "no version reads as 0.1.0";
  EXPECT_LT(compare_versions("x.y", "0.0.1"), 0) << "an invalid version never ranks above";
  EXPECT_GT(compare_versions("0.0.1", "1.0.0-rc1"), 0);
}

TEST(CniVersion, ParseVersionRefusesWhatIsNotMajorMinorPatch) {
  EXPECT_EQ(*parse_version("1.1.0"), (std::array<int, 3>{1, 1, 0}));
  for (const char* bad : {"1.1.0.0", "1..0", "1.", "v1.0.0", "-1.0.0", "1.0.0-rc1"}) {
    auto r = parse_version(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(CniVersion, CommandsThatCameLaterAreRefusedUnderOlderVersions) {
  auto check = check_command_allowed(Command::kCheck, "0.3.1");
  ASSERT_FALSE(check.ok());
  EXPECT_EQ(cni_code_for(check.error().code()), 1);
  EXPECT_NE(check.error().message().find("CHECK"), std::string::npos);
  EXPECT_TRUE(check_command_allowed(Command::kCheck, "0.4.0").ok());

  EXPECT_FALSE(check_command_allowed(Command::kGc, "1.0.0").ok());
  EXPECT_FALSE(check_command_allowed(Command::kStatus, "1.0.0").ok());
  EXPECT_TRUE(check_command_allowed(Command::kGc, "1.1.0").ok());
  EXPECT_TRUE(check_command_allowed(Command::kAdd, "0.3.0").ok());
}

TEST(CniVersion, ResultShapeFollowsTheVersion) {
  for (const char* v : {"0.3.0", "0.3.1", "0.4.0"}) {
    EXPECT_TRUE(result_has_ip_version(v)) << v;
    EXPECT_FALSE(result_has_1_1_fields(v)) << v;
  }
  EXPECT_FALSE(result_has_ip_version("1.0.0"));
  EXPECT_FALSE(result_has_1_1_fields("1.0.0"));
  EXPECT_TRUE(result_has_1_1_fields("1.1.0"));
}

TEST(CniCommand, NamesRoundTripAndAreCaseSensitive) {
  for (Command c : kAllCommands) {
    EXPECT_EQ(parse_command(command_name(c)), c);
  }
  EXPECT_EQ(command_name(Command::kGc), "GC");
  EXPECT_FALSE(parse_command("add").has_value());
  EXPECT_FALSE(parse_command("GET").has_value());
}

} // namespace
} // namespace fabric::cni
