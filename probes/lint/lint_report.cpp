#include "probes/lint/lint_report.h"

#include <algorithm>
#include <array>

#include "common/json.h"

namespace fabric::probes {
namespace {

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

} // namespace

std::string render_lint_text(const std::vector<LintCheck>& checks) {
  std::size_t verdict_w = 0, id_w = 0, subject_w = 0;
  for (const auto& c : checks) {
    verdict_w = std::max(verdict_w, verdict_name(c.verdict).size());
    id_w = std::max(id_w, c.id.size());
    subject_w = std::max(subject_w, c.subject.size());
  }
  std::string out;
  for (const auto& c : checks) {
    out += padded(std::string(verdict_name(c.verdict)), verdict_w) + "  " + padded(c.id, id_w) +
           "  " + padded(c.subject, subject_w) + "  " + c.message + "\n";
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
