#include <cstdlib>

#include <gtest/gtest.h>

#include "common/log.h"

namespace fabric::log {
namespace {

TEST(Log, ParsesEveryDocumentedLevel) {
  EXPECT_EQ(*parse_level("debug"), spdlog::level::debug);
  EXPECT_EQ(*parse_level("warn"), spdlog::level::warn);
  EXPECT_EQ(*parse_level("off"), spdlog::level::off);
  auto bad = parse_level("loud");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("loud"), std::string::npos);
}

TEST(Log, FlagOverridesEnvironmentAndEnvironmentOverridesDefault) {
  ::setenv(kLevelEnv, "debug", 1);
  ASSERT_TRUE(init("log-test").ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::debug);
  ASSERT_TRUE(init("log-test", "error").ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::err);
  ::setenv(kLevelEnv, "nonsense", 1);
  auto bad = init("log-test");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find(kLevelEnv), std::string::npos);
  ::unsetenv(kLevelEnv);
  ASSERT_TRUE(init("log-test").ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::warn);
}

} // namespace
} // namespace fabric::log
