#include "exporters/nccl_profiler/proc_stat.h"

#include "exporters/nccl_profiler/numbers.h"

namespace fabric::nccl_profiler {
namespace {

std::string_view next_field(std::string_view& rest) {
  std::size_t start = rest.find_first_not_of(" \t");
  if (start == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(start);
  std::size_t end = rest.find_first_of(" \t\n");
  std::string_view field = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  return field;
}

} // namespace

std::optional<uint64_t> parse_stat_start_ticks(std::string_view stat) {
  std::size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(close + 1);
  // After the command (field 2) come field 3 (state) ... field 22 (starttime).
  std::string_view field;
  for (int index = 3; index <= 22; ++index) {
    field = next_field(rest);
    if (field.empty()) return std::nullopt;
  }
  return parse_number<uint64_t>(field);
}

std::optional<uint64_t> parse_pid_ns_link(std::string_view target) {
  constexpr std::string_view kPrefix = "pid:[";
  if (!target.starts_with(kPrefix) || !target.ends_with(']')) return std::nullopt;
  return parse_number<uint64_t>(target.substr(kPrefix.size(), target.size() - kPrefix.size() - 1));
}

namespace {

// The fields of the status line that starts with `key`; empty when there is none.
std::string_view status_line(std::string_view status, std::string_view key) {
  std::size_t at = 0;
  while (at < status.size()) {
    std::size_t eol = status.find('\n', at);
    std::string_view line =
        status.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    at = eol == std::string_view::npos ? status.size() : eol + 1;
    if (line.starts_with(key)) return line.substr(key.size());
  }
  return {};
}

} // namespace

std::optional<uint32_t> parse_status_fsuid(std::string_view status) {
  std::string_view line = status_line(status, "Uid:");
  std::string_view field;
  for (int index = 0; index < 4; ++index) {
    field = next_field(line);
    if (field.empty()) return std::nullopt;
  }
  return parse_number<uint32_t>(field);
}

std::optional<int64_t> parse_status_nspid(std::string_view status) {
  std::string_view line = status_line(status, "NSpid:");
  std::string_view last;
  for (std::string_view field = next_field(line); !field.empty(); field = next_field(line)) {
    last = field;
  }
  return parse_number<int64_t>(last);
}

} // namespace fabric::nccl_profiler
