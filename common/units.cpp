#include "common/units.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace fabric::units {
namespace {

Error bad(std::string_view what, std::string_view text, std::string_view expected) {
  return Error(ErrorCode::kInvalidArgument, std::string(what),
               "invalid value '" + std::string(text) + "' (expected " + std::string(expected) +
                   ")");
}

// Splits "64KiB" into 64 and "KiB"; the number may have a fraction.
bool split_number(std::string_view text, double& number, std::string_view& suffix) {
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.'))
    ++i;
  if (i == 0) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + i, number);
  if (ec != std::errc() || end != text.data() + i) return false;
  suffix = text.substr(i);
  while (!suffix.empty() && suffix.front() == ' ')
    suffix.remove_prefix(1);
  return true;
}

} // namespace

Result<uint64_t> parse_uint(std::string_view text, std::string_view what, uint64_t min,
                            uint64_t max) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return bad(what, text, "a whole number");
  }
  if (value < min || value > max) {
    return Error(ErrorCode::kInvalidArgument, std::string(what),
                 std::string(text) + " is out of range (" + std::to_string(min) + " to " +
                     std::to_string(max) + ")");
  }
  return value;
}

Result<double> parse_positive(std::string_view text, std::string_view what) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value)) {
    return bad(what, text, "a number");
  }
  if (value <= 0)
    return Error(ErrorCode::kInvalidArgument, std::string(what), "must be greater than 0");
  return value;
}

Result<uint64_t> parse_size(std::string_view text, std::string_view what) {
  static constexpr std::string_view kExpected = "bytes, optionally with K, M or G (binary)";
  double number = 0;
  std::string_view suffix;
  if (!split_number(text, number, suffix)) return bad(what, text, kExpected);
  double scale = 0;
  if (suffix.empty() || suffix == "B")
    scale = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB" || suffix == "KB")
    scale = 1024.0;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB" || suffix == "MB")
    scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB" || suffix == "GB")
    scale = 1024.0 * 1024 * 1024;
  else
    return bad(what, text, kExpected);
  double bytes = number * scale;
  if (bytes != std::floor(bytes)) return bad(what, text, "a whole number of bytes");
  if (bytes >= 18446744073709551616.0) return bad(what, text, "a size below 16 EiB");
  return static_cast<uint64_t>(bytes);
}

Result<std::chrono::nanoseconds> parse_duration(std::string_view text, std::string_view what) {
  static constexpr std::string_view kExpected = "a duration such as 500ms, 10s or 2m";
  double number = 0;
  std::string_view suffix;
  if (!split_number(text, number, suffix)) return bad(what, text, kExpected);
  double ns_per_unit = 0;
  if (suffix.empty() || suffix == "s")
    ns_per_unit = 1e9;
  else if (suffix == "ms")
    ns_per_unit = 1e6;
  else if (suffix == "us")
    ns_per_unit = 1e3;
  else if (suffix == "ns")
    ns_per_unit = 1;
  else if (suffix == "m" || suffix == "min")
    ns_per_unit = 60e9;
  else if (suffix == "h")
    ns_per_unit = 3600e9;
  else
    return bad(what, text, kExpected);
  double ns = number * ns_per_unit;
  if (ns > 9.2e18) return bad(what, text, "a duration below 292 years");
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(ns)));
}

std::string format_size(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0 || value == std::floor(value)) {
    std::snprintf(buf, sizeof buf, "%.0f %s", value, kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g %s", value, kUnits[unit]);
  }
  return buf;
}

} // namespace fabric::units
