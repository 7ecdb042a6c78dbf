#include "probes/lint/lint_report.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "common/json.h"

namespace fabric::probes {
namespace {

// A terminal's 100 columns less one, the widest subject column a group of checks takes,
// the least room a message is given on a line, and the indent of one that starts below.
constexpr std::size_t kLineWidth = 99;
constexpr std::size_t kSubjectWidth = 32;
constexpr std::size_t kMinMessageWidth = 40;
constexpr std::size_t kHangingIndent = 4;

constexpr std::array<Verdict, 4> kVerdicts = {Verdict::kPass, Verdict::kWarn, Verdict::kFail,
                                              Verdict::kUnknown};

std::size_t count_of(const std::vector<LintCheck>& checks, Verdict verdict) {
  return static_cast<std::size_t>(std::count_if(
      checks.begin(), checks.end(), [&](const LintCheck& c) { return c.verdict == verdict; }));
}

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

// "eth0, eth1, eth2 (+25 more)": the subjects of a group within a column of kSubjectWidth.
std::string grouped_subjects(const std::vector<std::string>& subjects) {
  std::string out = subjects.front();
  std::size_t shown = 1;
  for (; shown < subjects.size(); ++shown) {
    if (out.size() + 2 + subjects[shown].size() > kSubjectWidth) break;
    out += ", " + subjects[shown];
  }
  if (shown < subjects.size()) out += " (+" + std::to_string(subjects.size() - shown) + " more)";
  return out;
}

// The message cut at spaces into lines shorter than kLineWidth, continuation lines
// indented to the message column; when the columns before it leave less than
// kMinMessageWidth, the message starts on the next line, indented a little.
std::string wrapped(const std::string& message, std::size_t column) {
  std::size_t indent = column;
  std::string out;
  if (column + kMinMessageWidth > kLineWidth) {
    indent = kHangingIndent;
    out = "\n" + std::string(indent, ' ');
  }
  const std::size_t width = kLineWidth - indent;
  std::size_t line_length = 0;
  for (std::size_t pos = 0; pos < message.size();) {
    std::size_t end = message.find(' ', pos);
    if (end == std::string::npos) end = message.size();
    if (line_length > 0 && line_length + 1 + (end - pos) > width) {
      out += "\n" + std::string(indent, ' ');
      line_length = 0;
    } else if (line_length > 0) {
      out += ' ';
      ++line_length;
    }
    // A word longer than a whole line (a path under --root) is cut where the line ends:
    // no line may pass the terminal's width.
    while (line_length + (end - pos) > width) {
      const std::size_t piece = width - line_length;
      out.append(message, pos, piece);
      out += "\n" + std::string(indent, ' ');
      line_length = 0;
      pos += piece;
    }
    out.append(message, pos, end - pos);
    line_length += end - pos;
    pos = end + 1;
  }
  return out;
}

} // namespace

std::string render_lint_text(const std::vector<LintCheck>& checks) {
  // One line per verdict and message: a node with 28 ports whose DCB cannot be read says
  // so once, naming the ports, not 28 times. --json keeps every check.
  struct Line {
    const LintCheck* check;
    std::vector<std::string> subjects;
  };
  std::vector<Line> lines;
  for (const auto& c : checks) {
    auto same = std::find_if(lines.begin(), lines.end(), [&](const Line& l) {
      return l.check->verdict == c.verdict && l.check->id == c.id && l.check->message == c.message;
    });
    if (same == lines.end()) {
      lines.push_back({&c, {c.subject}});
    } else {
      same->subjects.push_back(c.subject);
    }
  }
  std::vector<std::string> subjects;
  std::size_t verdict_w = 0, id_w = 0, subject_w = 0;
  for (const auto& l : lines) {
    subjects.push_back(grouped_subjects(l.subjects));
    verdict_w = std::max(verdict_w, verdict_name(l.check->verdict).size());
    id_w = std::max(id_w, l.check->id.size());
    subject_w = std::max(subject_w, subjects.back().size());
  }
  const std::size_t message_column = verdict_w + id_w + subject_w + 6;
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const LintCheck& c = *lines[i].check;
    std::string line = padded(std::string(verdict_name(c.verdict)), verdict_w) + "  " +
                       padded(c.id, id_w) + "  " + padded(subjects[i], subject_w) + "  ";
    const std::string message = wrapped(c.message, message_column);
    // A message that starts on the next line leaves no padding at the end of this one.
    if (message.starts_with('\n')) line.erase(line.find_last_not_of(' ') + 1);
    out += line + message + "\n";
  }
  out += std::to_string(checks.size()) + " check" + (checks.size() == 1 ? "" : "s") + ":";
  for (std::size_t i = 0; i < kVerdicts.size(); ++i) {
    out += (i ? ", " : " ") + std::to_string(count_of(checks, kVerdicts[i])) + " " +
           std::string(verdict_name(kVerdicts[i]));
  }
  return out + "\n";
}

std::string render_lint_json(const std::vector<LintCheck>& checks) {
  json::Writer w;
  w.begin_object();
  w.field("schema_version", json::kSchemaVersion);
  w.key("checks").begin_array();
  for (const auto& c : checks) {
    w.begin_object();
    w.field("id", c.id);
    w.field("verdict", verdict_name(c.verdict));
    w.field("subject", c.subject);
    w.field("message", c.message);
    w.end_object();
  }
  w.end_array();
  w.key("summary").begin_object();
  for (Verdict v : kVerdicts) {
    w.field(verdict_name(v), static_cast<uint64_t>(count_of(checks, v)));
  }
  w.end_object();
  w.field("ok", lint_exit_status(checks) == kExitOk);
  w.end_object();
  return w.str();
}

} // namespace fabric::probes
