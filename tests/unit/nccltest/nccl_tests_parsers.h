// The three kinds of parser that read nccl-tests' stdout in the field, written the way
// their users write them: one driven by the column-header line, one that takes any line
// of exactly 13 whitespace-separated tokens, and one regular expression per line. If any
// of them reads nccl-tests' output and not ours, a script somewhere breaks.
#pragma once

#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fabric::nccltest::testing {

struct ParsedRow {
  long long size = 0, count = 0;
  std::string type, redop;
  int root = 0;
  double oop_time = 0, oop_algbw = 0, oop_busbw = 0;
  std::string oop_wrong;
  double ip_time = 0, ip_algbw = 0, ip_busbw = 0;
  std::string ip_wrong;
};

struct ParsedRun {
  std::vector<ParsedRow> rows;
  std::optional<long long> out_of_bounds;
  std::optional<std::string> out_of_bounds_verdict;
  std::optional<double> avg_busbw;
};

// A text's lines, each with its newline.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    out.push_back(line + "\n");
  return out;
}

inline std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  std::string t;
  while (in >> t)
    out.push_back(t);
  return out;
}

inline void parse_footer(const std::string& line, ParsedRun& run) {
  static const std::regex oob(R"(^# Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)\s*$)");
  static const std::regex avg(R"(^# Avg bus bandwidth\s*:\s*([0-9.]+)\s*(OK|FAILED)?\s*$)");
  std::smatch m;
  if (std::regex_match(line, m, oob)) {
    run.out_of_bounds = std::stoll(m[1]);
    run.out_of_bounds_verdict = m[2];
  } else if (std::regex_match(line, m, avg)) {
    run.avg_busbw = std::stod(m[1]);
  }
}

// The 13 fields in nccl-tests' order.
inline ParsedRow row_of(const std::vector<std::string>& t) {
  ParsedRow r;
  r.size = std::stoll(t[0]);
  r.count = std::stoll(t[1]);
  r.type = t[2];
  r.redop = t[3];
  r.root = std::stoi(t[4]);
  r.oop_time = std::stod(t[5]);
  r.oop_algbw = std::stod(t[6]);
  r.oop_busbw = std::stod(t[7]);
  r.oop_wrong = t[8];
  r.ip_time = std::stod(t[9]);
  r.ip_algbw = std::stod(t[10]);
  r.ip_busbw = std::stod(t[11]);
  r.ip_wrong = t[12];
  return r;
}

// Any non-comment line with exactly 13 tokens is a result row.
inline ParsedRun parse_fixed_13(const std::string& text) {
  ParsedRun run;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] == '#') {
      parse_footer(line, run);
      continue;
    }
    auto t = tokens(line);
    if (t.size() != 13) continue;
    run.rows.push_back(row_of(t));
  }
  return run;
}

// Finds the column-header line ("#  size  count  type ... #wrong"), maps the columns by
// name (the first "busbw" is out-of-place, the second in-place) and reads the rows under
// it until the first comment line after them.
inline std::optional<ParsedRun> parse_header_driven(const std::string& text) {
  ParsedRun run;
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> columns;
  bool in_table = false;
  while (std::getline(lines, line)) {
    if (columns.empty()) {
      auto t = tokens(line);
      if (t.size() > 1 && t[0] == "#" && t[1] == "size") {
        columns.assign(t.begin() + 1, t.end());
        if (!std::getline(lines, line)) return std::nullopt; // the units line
        auto units = tokens(line);
        if (units.size() < 2 || units[1] != "(B)") return std::nullopt;
      }
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      parse_footer(line, run);
      if (in_table) in_table = false;
      continue;
    }
    in_table = true;
    auto t = tokens(line);
    if (t.size() != columns.size()) return std::nullopt;
    auto index = [&](const std::string& name, int nth) -> std::size_t {
      int seen = 0;
      for (std::size_t i = 0; i < columns.size(); ++i) {
        if (columns[i] == name && seen++ == nth) return i;
      }
      return columns.size();
    };
    // The fields by column name, in row_of's order.
    const std::pair<const char*, int> order[] = {
        {"size", 0},  {"count", 0}, {"type", 0},  {"redop", 0},  {"root", 0},
        {"time", 0},  {"algbw", 0}, {"busbw", 0}, {"#wrong", 0}, {"time", 1},
        {"algbw", 1}, {"busbw", 1}, {"#wrong", 1}};
    std::vector<std::string> fields;
    for (const auto& [name, nth] : order)
      fields.push_back(t.at(index(name, nth)));
    run.rows.push_back(row_of(fields));
  }
  if (columns.empty()) return std::nullopt;
  return run;
}

// One regular expression for a row, numbers in fixed-point.
inline ParsedRun parse_regex(const std::string& text) {
  static const std::regex row(
      R"(^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+(\d+|N/A)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+(\d+|N/A)\s*$)");
  ParsedRun run;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) {
      std::vector<std::string> fields;
      for (std::size_t i = 1; i < m.size(); ++i)
        fields.push_back(m[i]);
      run.rows.push_back(row_of(fields));
    } else {
      parse_footer(line, run);
    }
  }
  return run;
}

} // namespace fabric::nccltest::testing
