#include <cstdlib>
#include <sstream>

#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>

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

TEST(Log, APeersTextCannotForgeALineOrDriveATerminal) {
  EXPECT_EQ(escape_for_log("bye\nerror FORGED"), "bye\\nerror FORGED");
  EXPECT_EQ(escape_for_log("test\x1b[31mred\r\t\x7f"), "test\\x1b[31mred\\r\\t\\x7f");
  EXPECT_EQ(escape_for_log("csi \xc2\x9b here"), "csi \\x9b here");
  EXPECT_EQ(escape_for_log("caf\xc3\xa9 \\n"), "caf\xc3\xa9 \\n") << "text and UTF-8 kept";

  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("peer-test", sink);
  logger.set_formatter(make_formatter());
  logger.warn("session from {} test={}", "10.0.0.1", "bw\nerror FORGED");
  EXPECT_EQ(out.str(), "warning peer-test: session from 10.0.0.1 test=bw\\nerror FORGED\n");
}

} // namespace
} // namespace fabric::log
