#include "common/log.h"

#include <cstdio>
#include <cstdlib>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace fabric::log {
namespace {

// %* in the pattern: the message, escaped. Every line of every tool goes through it, so
// whatever a peer sent (a test name, an error text, a file's content) is logged safely
// wherever it is quoted.
class EscapedMessage : public spdlog::custom_flag_formatter {
public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string escaped =
        escape_for_log(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

} // namespace

std::string escape_for_log(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    // C1 controls arrive as UTF-8 (0xc2 0x80-0x9f); a terminal may obey them too.
    const bool c1 = c == 0xc2 && i + 1 < text.size() &&
                    static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9f;
    if (c >= 0x20 && c != 0x7f && !c1) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      const auto byte = c1 ? static_cast<unsigned char>(text[++i]) : c;
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
}

std::unique_ptr<spdlog::formatter> make_formatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern("%^%l%$ %n: %*");
  return formatter;
}

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
  logger->set_formatter(make_formatter());
  logger->set_level(chosen);
  spdlog::set_default_logger(logger);
  return Ok();
}

void report_error(const std::string& program, const Error& error) {
  std::fprintf(stderr, "%s: %s\n", program.c_str(), error.message().c_str());
  if (!error.hint().empty()) std::fprintf(stderr, "hint: %s\n", error.hint().c_str());
}

} // namespace fabric::log
