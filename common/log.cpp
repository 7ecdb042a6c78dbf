#include "common/log.h"

#include <cstdio>
#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace fabric::log {

Result<spdlog::level::level_enum> parse_level(std::string_view name) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace},       {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},         {"warn", spdlog::level::warn},
      {"warning", spdlog::level::warn},      {"error", spdlog::level::err},
      {"critical", spdlog::level::critical}, {"off", spdlog::level::off},
  };
  for (const auto& [n, level] : kLevels) {
    if (n == name) return level;
  }
  return Error(ErrorCode::kInvalidArgument, "log level",
               "unknown level '" + std::string(name) + "' (expected one of " + kLevelNames + ")");
}

Result<void> init(const std::string& program, std::optional<std::string> level) {
  spdlog::level::level_enum chosen = spdlog::level::warn;
  if (level) {
    FABRIC_ASSIGN_OR_RETURN(chosen, parse_level(*level).context("--log-level"));
  } else if (const char* env = std::getenv(kLevelEnv); env != nullptr && *env != '\0') {
    FABRIC_ASSIGN_OR_RETURN(chosen, parse_level(env).context(kLevelEnv));
  }
  auto logger = spdlog::get(program);
  if (!logger) logger = spdlog::stderr_color_mt(program);
  logger->set_pattern("%^%l%$ %n: %v");
  logger->set_level(chosen);
  spdlog::set_default_logger(logger);
  return Ok();
}

void report_error(const std::string& program, const Error& error) {
  std::fprintf(stderr, "%s: %s\n", program.c_str(), error.message().c_str());
  if (!error.hint().empty()) std::fprintf(stderr, "hint: %s\n", error.hint().c_str());
}

} // namespace fabric::log
