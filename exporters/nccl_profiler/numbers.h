// Whole numbers from text that came from outside the process (procfs, a shared
// directory, the environment): all of the text must be the number, in range.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

namespace fabric::nccl_profiler {

template <typename T> std::optional<T> parse_number(std::string_view text, int base = 10) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

} // namespace fabric::nccl_profiler
