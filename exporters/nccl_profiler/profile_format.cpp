#include "exporters/nccl_profiler/profile_format.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <set>

#include "exporters/nccl_profiler/numbers.h"

namespace fabric::nccl_profiler {
namespace {

template <typename T> void append_number(std::string& out, T value) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

void append_field(std::string& out, std::string_view key, uint64_t value) {
  out += ' ';
  out += key;
  out += ' ';
  append_number(out, value);
}

void append_gbps(std::string& out, std::string_view key, double bytes_per_second) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, " %.*s %.2f", static_cast<int>(key.size()), key.data(),
                bytes_per_second / 1e9);
  out += buffer;
}

std::string hex64(uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016" PRIx64, value);
  return buffer;
}

// A cell's counters in the order of the file; both the writer and the reader go by it.
constexpr std::array<std::pair<std::string_view, uint64_t ProfileCell::*>, 7> kCellCounters = {{
    {"ops", &ProfileCell::ops},
    {"bytes", &ProfileCell::bytes},
    {"timed_ops", &ProfileCell::timed_ops},
    {"timed_bytes", &ProfileCell::timed_bytes},
    {"busy_ns", &ProfileCell::busy_ns},
    {"last_timed_bytes", &ProfileCell::last_timed_bytes},
    {"last_busy_ns", &ProfileCell::last_busy_ns},
}};

// The communicator's counters on its "comm" line, all of them or none.
constexpr std::array<std::pair<std::string_view, uint64_t CommBusy::*>, 4> kCommCounters = {{
    {"timed_bytes", &CommBusy::timed_bytes},
    {"busy_ns", &CommBusy::busy_ns},
    {"last_timed_bytes", &CommBusy::last_timed_bytes},
    {"last_busy_ns", &CommBusy::last_busy_ns},
}};

// One line's space-separated tokens, without allocating.
class Tokens {
public:
  explicit Tokens(std::string_view line) : rest_(line) {}
  std::string_view next() {
    std::size_t start = rest_.find_first_not_of(' ');
    if (start == std::string_view::npos) {
      rest_ = {};
      return {};
    }
    rest_.remove_prefix(start);
    std::size_t end = rest_.find(' ');
    std::string_view token = rest_.substr(0, end);
    rest_.remove_prefix(end == std::string_view::npos ? rest_.size() : end);
    return token;
  }

private:
  std::string_view rest_;
};

class Parser {
public:
  Parser(std::string_view what, const ParseLimits& limits) : what_(what), limits_(limits) {}

  Error error(std::size_t line, const std::string& detail) const {
    return Error(ErrorCode::kDecode, std::string(what_),
                 "line " + std::to_string(line) + ": " + detail);
  }

  template <typename T>
  Result<T> number(std::size_t line, std::string_view key, std::string_view text, int base = 10) {
    if (auto value = parse_number<T>(text, base)) return *value;
    return error(line,
                 std::string(key) + ": not a number: '" + std::string(text.substr(0, 32)) + "'");
  }

  Result<ProcessProfile> parse(std::string_view text);

private:
  Result<void> header_field(std::size_t line, std::string_view key, Tokens& tokens);
  Result<void> comm_line(std::size_t line, Tokens& tokens);
  Result<void> cell_line(std::size_t line, Tokens& tokens);

  std::string_view what_;
  const ParseLimits& limits_;
  ProcessProfile profile_;
  std::set<std::string_view> header_seen_;
  std::set<std::pair<Collective, uint64_t>> cells_seen_;
  std::size_t cells_ = 0;
  // A process may drive several ranks of one communicator (ncclCommInitAll, one process
  // per host, nccl-tests -g): the hash is the same for each, the rank tells them apart.
  std::set<std::pair<uint64_t, int>> comms_seen_;
};

Result<void> Parser::header_field(std::size_t line, std::string_view key, Tokens& tokens) {
  std::string_view value = tokens.next();
  if (value.empty()) return error(line, std::string(key) + ": no value");
  if (!tokens.next().empty()) return error(line, std::string(key) + ": more than one value");
  if (!header_seen_.insert(key).second) return error(line, std::string(key) + ": repeated");
  auto& p = profile_;
  if (key == "pid") {
    FABRIC_ASSIGN_OR_RETURN(p.pid, number<int64_t>(line, key, value));
    if (p.pid <= 0) return error(line, "pid: not positive");
  } else if (key == "pid_ns") {
    FABRIC_ASSIGN_OR_RETURN(p.pid_ns, number<uint64_t>(line, key, value));
  } else if (key == "start_ticks") {
    FABRIC_ASSIGN_OR_RETURN(p.start_ticks, number<uint64_t>(line, key, value));
  } else if (key == "written_unix_ms") {
    FABRIC_ASSIGN_OR_RETURN(p.written_unix_ms, number<int64_t>(line, key, value));
  } else if (key == "interval_ms") {
    FABRIC_ASSIGN_OR_RETURN(p.interval_ms, number<int64_t>(line, key, value));
    if (p.interval_ms <= 0 || p.interval_ms > kMaxIntervalMs)
      return error(line, "interval_ms: not between 1 and " + std::to_string(kMaxIntervalMs));
  } else if (key == "sequence") {
    FABRIC_ASSIGN_OR_RETURN(p.sequence, number<uint64_t>(line, key, value));
  } else if (key == "abi") {
    if (value.size() > 32) return error(line, "abi: longer than 32 characters");
    p.abi = std::string(value);
  } else if (key == "events_dropped") {
    FABRIC_ASSIGN_OR_RETURN(p.events_dropped, number<uint64_t>(line, key, value));
  } else if (key == "events_abandoned") {
    FABRIC_ASSIGN_OR_RETURN(p.events_abandoned, number<uint64_t>(line, key, value));
  }
  return Ok();
}

Result<void> Parser::comm_line(std::size_t line, Tokens& tokens) {
  if (profile_.comms.size() >= limits_.max_comms) {
    return error(line, "more than " + std::to_string(limits_.max_comms) + " communicators");
  }
  CommProfile comm;
  std::string_view hash = tokens.next();
  if (hash.size() != 16) return error(line, "comm: the hash is not 16 hex digits");
  FABRIC_ASSIGN_OR_RETURN(comm.hash, number<uint64_t>(line, "comm", hash, 16));
  bool has_nranks = false, has_rank = false;
  CommBusy busy;
  std::array<bool, kCommCounters.size()> busy_seen{};
  for (std::string_view key = tokens.next(); !key.empty(); key = tokens.next()) {
    std::string_view value = tokens.next();
    auto counter =
        std::ranges::find(kCommCounters, key, &decltype(kCommCounters)::value_type::first);
    if (counter != kCommCounters.end()) {
      auto i = static_cast<std::size_t>(counter - kCommCounters.begin());
      if (busy_seen[i]) return error(line, std::string(key) + ": repeated");
      FABRIC_ASSIGN_OR_RETURN(busy.*counter->second, number<uint64_t>(line, key, value));
      busy_seen[i] = true;
    } else if (key == "nranks") {
      FABRIC_ASSIGN_OR_RETURN(comm.nranks, number<int>(line, key, value));
      has_nranks = true;
    } else if (key == "rank") {
      FABRIC_ASSIGN_OR_RETURN(comm.rank, number<int>(line, key, value));
      has_rank = true;
    } else if (key == "nnodes") {
      FABRIC_ASSIGN_OR_RETURN(comm.nnodes, number<int>(line, key, value));
    } else if (value.empty()) {
      return error(line, std::string(key) + ": no value");
    }
  }
  if (!has_nranks || !has_rank) return error(line, "comm: nranks and rank are required");
  if (std::ranges::any_of(busy_seen, std::identity{})) {
    for (std::size_t i = 0; i < kCommCounters.size(); ++i) {
      if (!busy_seen[i])
        return error(line, "comm: " + std::string(kCommCounters[i].first) + " is missing");
    }
    comm.busy = busy;
  }
  // nranks 0: not known (profiler ABI v1 to v3 never says).
  if (comm.nranks < 0 || comm.rank < 0 || (comm.nranks > 0 && comm.rank >= comm.nranks)) {
    return error(line, "comm: rank " + std::to_string(comm.rank) + " of " +
                           std::to_string(comm.nranks) + " ranks");
  }
  // nnodes 0: not known, as nranks. Negative is not a count, and would not render back.
  if (comm.nnodes < 0) return error(line, "comm: nnodes " + std::to_string(comm.nnodes));
  if (!comms_seen_.emplace(comm.hash, comm.rank).second) {
    return error(line,
                 "comm " + std::string(hash) + " rank " + std::to_string(comm.rank) + ": repeated");
  }
  cells_seen_.clear();
  profile_.comms.push_back(std::move(comm));
  return Ok();
}

Result<void> Parser::cell_line(std::size_t line, Tokens& tokens) {
  if (profile_.comms.empty()) return error(line, "cell before any comm");
  if (++cells_ > limits_.max_cells) {
    return error(line, "more than " + std::to_string(limits_.max_cells) + " cells");
  }
  ProfileCell cell;
  std::string_view name = tokens.next();
  auto collective = parse_collective_name(name);
  if (!collective)
    return error(line, "cell: unknown collective '" + std::string(name.substr(0, 32)) + "'");
  cell.collective = *collective;
  FABRIC_ASSIGN_OR_RETURN(cell.size_bytes, number<uint64_t>(line, "size", tokens.next()));
  if (!bucket_of_lower_bound(cell.size_bytes)) {
    return error(line,
                 "cell: size " + std::to_string(cell.size_bytes) + " is not 0 or a power of two");
  }
  if (!cells_seen_.emplace(cell.collective, cell.size_bytes).second) {
    return error(line, "cell " + std::string(name) + " " + std::to_string(cell.size_bytes) +
                           ": repeated");
  }
  std::array<bool, kCellCounters.size()> seen{};
  for (std::string_view key = tokens.next(); !key.empty(); key = tokens.next()) {
    std::string_view value = tokens.next();
    if (value.empty()) return error(line, std::string(key) + ": no value");
    for (std::size_t i = 0; i < kCellCounters.size(); ++i) {
      if (kCellCounters[i].first != key) continue;
      if (seen[i]) return error(line, std::string(key) + ": repeated");
      FABRIC_ASSIGN_OR_RETURN(cell.*kCellCounters[i].second, number<uint64_t>(line, key, value));
      seen[i] = true;
    }
  }
  for (std::size_t i = 0; i < kCellCounters.size(); ++i) {
    if (!seen[i])
      return error(line, "cell: " + std::string(kCellCounters[i].first) + " is missing");
  }
  if (cell.timed_ops > cell.ops || cell.timed_bytes > cell.bytes) {
    return error(line, "cell: more timed operations than operations");
  }
  profile_.comms.back().cells.push_back(cell);
  return Ok();
}

Result<ProcessProfile> Parser::parse(std::string_view text) {
  if (text.size() > limits_.max_bytes) {
    return Error(ErrorCode::kDecode, std::string(what_),
                 "larger than " + std::to_string(limits_.max_bytes) + " bytes");
  }
  bool ended = false;
  std::size_t line_number = 0;
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    if (eol == std::string_view::npos) return error(line_number + 1, "no newline at the end");
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol + 1);
    ++line_number;
    if (line.size() > limits_.max_line) {
      return error(line_number, "longer than " + std::to_string(limits_.max_line) + " bytes");
    }
    if (ended) return error(line_number, "text after the end line");
    // Printable ASCII only: nothing from the file can reach a label or a log as a
    // control character.
    for (char c : line) {
      if (c < 0x20 || c > 0x7e) return error(line_number, "not printable ASCII");
    }
    Tokens tokens(line);
    std::string_view key = tokens.next();
    if (line_number == 1) {
      if (key != kProfileMagic) return error(1, "not a fabric NCCL profile");
      FABRIC_ASSIGN_OR_RETURN(int version, number<int>(1, "version", tokens.next()));
      if (version != kProfileFormatVersion) {
        return Error(ErrorCode::kIncompatibleVersion, std::string(what_),
                     "format version " + std::to_string(version) + " is not the supported " +
                         std::to_string(kProfileFormatVersion));
      }
    } else if (key == "end") {
      ended = true;
    } else if (key == "comm") {
      FABRIC_TRY(comm_line(line_number, tokens));
    } else if (key == "cell") {
      FABRIC_TRY(cell_line(line_number, tokens));
    } else if (key.empty()) {
      return error(line_number, "empty line");
    } else if (!profile_.comms.empty()) {
      return error(line_number, "'" + std::string(key.substr(0, 32)) + "' after the communicators");
    } else {
      FABRIC_TRY(header_field(line_number, key, tokens));
    }
  }
  if (line_number == 0) return error(1, "empty file");
  if (!ended) return error(line_number, "no end line: the file is cut short");
  for (std::string_view required :
       {"pid", "start_ticks", "written_unix_ms", "interval_ms", "sequence"}) {
    if (!header_seen_.contains(required))
      return error(line_number, std::string(required) + " is missing");
  }
  return std::move(profile_);
}

} // namespace

std::string profile_file_name(int64_t pid, uint64_t pid_ns, uint64_t start_ticks) {
  std::string name(kProfileFilePrefix);
  append_number(name, pid_ns);
  name += '-';
  append_number(name, pid);
  name += '-';
  append_number(name, start_ticks);
  name += kProfileFileSuffix;
  return name;
}

std::optional<double> algbw(uint64_t bytes, uint64_t ns) {
  if (ns == 0) return std::nullopt;
  return static_cast<double>(bytes) / (static_cast<double>(ns) * 1e-9);
}

std::string render_profile(const ProcessProfile& p) {
  std::string out(kProfileMagic);
  out += ' ';
  append_number(out, static_cast<int64_t>(kProfileFormatVersion));
  out += '\n';
  auto header = [&out](std::string_view key, auto value) {
    out += key;
    out += ' ';
    append_number(out, value);
    out += '\n';
  };
  header("pid", p.pid);
  header("pid_ns", p.pid_ns);
  header("start_ticks", p.start_ticks);
  header("written_unix_ms", p.written_unix_ms);
  header("interval_ms", p.interval_ms);
  header("sequence", p.sequence);
  out += "abi ";
  out += p.abi.empty() ? "unknown" : p.abi;
  out += '\n';
  header("events_dropped", p.events_dropped);
  header("events_abandoned", p.events_abandoned);
  for (const auto& comm : p.comms) {
    out += "comm " + hex64(comm.hash);
    append_field(out, "nranks", static_cast<uint64_t>(comm.nranks));
    append_field(out, "rank", static_cast<uint64_t>(comm.rank));
    append_field(out, "nnodes", static_cast<uint64_t>(comm.nnodes));
    if (comm.busy) {
      for (const auto& [key, member] : kCommCounters)
        append_field(out, key, (*comm.busy).*member);
    }
    out += '\n';
    for (const auto& cell : comm.cells) {
      out += "cell ";
      out += collective_name(cell.collective);
      out += ' ';
      append_number(out, cell.size_bytes);
      for (const auto& [key, member] : kCellCounters)
        append_field(out, key, cell.*member);
      // For a person reading the file: the last interval's bandwidths in GB/s, as
      // nccl-tests prints them. Readers recompute them from the counters.
      if (auto bw = algbw(cell.last_timed_bytes, cell.last_busy_ns)) {
        append_gbps(out, "algbw_gbps", *bw);
        if (auto factor = bus_factor(cell.collective, comm.nranks)) {
          append_gbps(out, "busbw_gbps", *bw * *factor);
        }
      }
      out += '\n';
    }
  }
  out += "end\n";
  return out;
}

Result<ProcessProfile> parse_profile(std::string_view text, std::string_view what,
                                     const ParseLimits& limits) {
  return Parser(what, limits).parse(text);
}

} // namespace fabric::nccl_profiler
