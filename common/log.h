// Logging: spdlog to stderr only (stdout carries results). The level comes from
// --log-level, else the FABRIC_LOG_LEVEL environment variable, else "warn".
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/result.h"

namespace fabric::log {

inline constexpr const char* kLevelEnv = "FABRIC_LOG_LEVEL";
inline constexpr const char* kLevelNames = "trace, debug, info, warn, error, critical, off";

Result<spdlog::level::level_enum> parse_level(std::string_view name);

// `text` as one log line shows it: control bytes (newline, escape, ...) and C1 controls
// as \n, \r, \t or \xNN, so a peer's text can neither forge a line nor drive a terminal.
std::string escape_for_log(std::string_view text);

// The formatter every logger uses: "level program: message", the message escaped.
std::unique_ptr<spdlog::formatter> make_formatter();

// Installs the stderr logger named after the program. `level` overrides the environment.
Result<void> init(const std::string& program, std::optional<std::string> level = std::nullopt);

// Prints an error for a person: "program: message" and, when present, "hint: ...".
void report_error(const std::string& program, const Error& error);

} // namespace fabric::log
