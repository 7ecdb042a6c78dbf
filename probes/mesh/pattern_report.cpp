#include "probes/mesh/pattern_report.h"

#include <cstdio>
#include <map>

namespace fabric::probes {
namespace {

std::string pattern_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::size_t follow_up_count(const PatternMeshReport& r) {
  return r.narrowing.follow_up_rounds;
}

std::string pair_name(const PatternMeshReport& r, const PairResult& p) {
  return r.hosts.at(p.source) + " -> " + r.hosts.at(p.destination);
}

} // namespace

std::string render_pattern_text(const PatternMeshReport& r) {
  const Narrowing& n = r.narrowing;
  std::string out = r.metric + " (" + r.unit + "), " + r.plan + "\n";
  const std::size_t measured = r.results.size() - r.failures.size();
  out += "  results: " + std::to_string(measured) + " of " + std::to_string(r.results.size()) +
         " pairs; median " + pattern_number(n.baseline) + " " + r.unit + "; low when " +
         (r.better == Better::kHigher ? "below " + pattern_number(n.baseline - n.limit)
                                      : "above " + pattern_number(n.baseline + n.limit)) +
         " " + r.unit + "\n";
  out += "  rounds: " + std::to_string(r.pattern_rounds) + " of the pattern, " +
         std::to_string(follow_up_count(r)) + " follow-up" +
         (r.narrowed ? "" : " (narrowing off)") + "\n";
  out += "  verdict: " + describe_verdict(n.verdict, r.hosts) + "\n";
  for (const auto& e : n.verdict.evidence) {
    out += "    round " + std::to_string(e.result.round) + "  " + pair_name(r, e.result) + "  " +
           (e.result.value ? pattern_number(*e.result.value) + " " + r.unit : "no result") + "  " +
           e.why + "\n";
  }
  if (!r.failures.empty()) {
    out += "  failures: " + std::to_string(r.failures.size()) + " pairs without a result\n";
    for (std::size_t i = 0; i < std::min(r.failures.size(), kMaxListedFailures); ++i) {
      const auto& f = r.failures[i];
      out += "    " + r.hosts.at(f.source) + " -> " + r.hosts.at(f.destination) + ": " + f.error +
             "\n";
    }
    if (r.failures.size() > kMaxListedFailures) {
      out += "    ... and " + std::to_string(r.failures.size() - kMaxListedFailures) +
             " more (every pair is in --csv)\n";
    }
  }
  return out;
}

void write_pattern_json(json::Writer& w, const PatternMeshReport& r) {
  const Narrowing& n = r.narrowing;
  const FaultVerdict& v = n.verdict;
  w.begin_object();
  w.field("metric", r.metric).field("unit", r.unit);
  w.field("better", r.better == Better::kHigher ? "higher" : "lower");
  w.field("pattern", r.plan);
  w.field("pattern_rounds", static_cast<uint64_t>(r.pattern_rounds));
  w.field("follow_up_rounds", static_cast<uint64_t>(follow_up_count(r)));
  w.field("results", static_cast<uint64_t>(r.results.size()));
  w.field("median", n.baseline).field("low_limit", n.limit);
  w.field("low_results", static_cast<uint64_t>(v.low_results));
  w.key("verdict").begin_object();
  w.field("kind", fault_kind_name(v.kind));
  w.field("text", describe_verdict(v, r.hosts));
  w.key("hosts").begin_array();
  for (std::size_t h : v.hosts)
    w.value(r.hosts.at(h));
  w.end_array();
  if (v.kind == FaultKind::kUplink) w.field("leaf", v.leaf);
  w.key("candidates").begin_array();
  for (const auto& c : v.candidates)
    w.value(c);
  w.end_array();
  w.key("evidence").begin_array();
  for (const auto& e : v.evidence) {
    w.begin_object();
    w.field("source", r.hosts.at(e.result.source));
    w.field("destination", r.hosts.at(e.result.destination));
    w.field("round", static_cast<uint64_t>(e.result.round));
    w.field("value", e.result.value);
    w.field("why", e.why);
    w.end_object();
  }
  w.end_array().end_object();
  w.key("failures").begin_object();
  w.field("count", static_cast<uint64_t>(r.failures.size()));
  w.key("first").begin_array();
  for (std::size_t i = 0; i < std::min(r.failures.size(), kMaxListedFailures); ++i) {
    const auto& f = r.failures[i];
    w.begin_object();
    w.field("source", r.hosts.at(f.source)).field("destination", r.hosts.at(f.destination));
    w.field("error", f.error);
    w.end_object();
  }
  w.end_array().end_object();
  w.end_object();
}

std::string render_pattern_reports_json(const std::vector<PatternMeshReport>& reports) {
  static const std::vector<std::string> no_hosts;
  return render_mesh_document(
      reports.empty() ? no_hosts : reports.front().hosts, reports.size(),
      [&](json::Writer& w, std::size_t t) { write_pattern_json(w, reports[t]); });
}

std::string render_pattern_csv(const PatternMeshReport& r) {
  std::map<std::pair<std::size_t, std::size_t>, const std::string*> errors;
  for (const auto& f : r.failures)
    errors.emplace(std::pair(f.source, f.destination), &f.error);
  const double low_below = r.narrowing.baseline - r.narrowing.limit;
  const double low_above = r.narrowing.baseline + r.narrowing.limit;
  std::string out = "round,source,destination,source_leaf,destination_leaf,value,low,error\r\n";
  for (const auto& p : r.results) {
    out += std::to_string(p.round) + "," + mesh_csv_field(r.hosts.at(p.source)) + "," +
           mesh_csv_field(r.hosts.at(p.destination)) + "," + mesh_csv_field(r.leaves.at(p.source)) +
           "," + mesh_csv_field(r.leaves.at(p.destination)) + ",";
    if (p.value) {
      const bool low = r.better == Better::kHigher ? *p.value < low_below : *p.value > low_above;
      out += exact_number(*p.value) + "," + (low ? "1" : "0") + ",";
    } else {
      auto e = errors.find({p.source, p.destination});
      out += ",," + (e != errors.end() ? mesh_csv_field(*e->second) : std::string());
    }
    out += "\r\n";
  }
  return out;
}

MeshReport group_pattern_report(const PatternMeshReport& r) {
  const std::size_t n = r.hosts.size();
  const bool placed = !r.leaves.empty() && !r.leaves.front().empty();
  std::vector<std::size_t> group_of(n);
  MeshReport g;
  g.metric = r.metric;
  g.unit = r.unit;
  g.better = r.better;
  if (placed) {
    std::map<std::string, std::size_t> index;
    for (std::size_t h = 0; h < n; ++h) {
      auto [it, added] = index.emplace(r.leaves[h], g.hosts.size());
      if (added) g.hosts.push_back(r.leaves[h]);
      group_of[h] = it->second;
    }
    g.self_pairs = true;
  } else if (n <= kMaxHeatmapGroups) {
    g.hosts = r.hosts;
    for (std::size_t h = 0; h < n; ++h)
      group_of[h] = h;
  } else {
    const std::size_t block = (n + kMaxHeatmapGroups - 1) / kMaxHeatmapGroups;
    for (std::size_t first = 0; first < n; first += block) {
      const std::size_t last = std::min(n, first + block) - 1;
      g.hosts.push_back(r.hosts[first] + ".." + r.hosts[last]);
      for (std::size_t h = first; h <= last; ++h)
        group_of[h] = g.hosts.size() - 1;
    }
    g.self_pairs = true;
  }
  const std::size_t groups = g.hosts.size();
  std::vector<std::vector<std::vector<double>>> values(groups,
                                                       std::vector<std::vector<double>>(groups));
  for (const auto& p : r.results) {
    if (p.value) values[group_of[p.source]][group_of[p.destination]].push_back(*p.value);
  }
  g.matrix.assign(groups, std::vector<std::optional<double>>(groups));
  for (std::size_t a = 0; a < groups; ++a) {
    for (std::size_t b = 0; b < groups; ++b) {
      if (!values[a][b].empty()) g.matrix[a][b] = robust_stats(std::move(values[a][b])).median;
    }
  }
  const FaultVerdict& v = r.narrowing.verdict;
  auto flag_group = [&](std::size_t group) {
    FlaggedHost f;
    f.host = group;
    f.as_source = f.as_destination = true;
    f.reason = describe_verdict(v, r.hosts);
    g.outliers.hosts.push_back(f);
  };
  if (v.kind == FaultKind::kNode) flag_group(group_of[v.hosts.at(0)]);
  if (v.kind == FaultKind::kUplink) {
    for (std::size_t i = 0; i < groups; ++i)
      if (g.hosts[i] == v.leaf) flag_group(i);
  }
  if (v.kind == FaultKind::kPath) {
    const std::size_t a = group_of[v.hosts.at(0)], b = group_of[v.hosts.at(1)];
    for (auto [s, d] : {std::pair(a, b), std::pair(b, a)}) {
      FlaggedCell c;
      c.source = s;
      c.destination = d;
      c.reason = describe_verdict(v, r.hosts);
      g.outliers.cells.push_back(c);
    }
  }
  return g;
}

std::string render_pattern_svg(const PatternMeshReport& report) {
  return render_mesh_svg(group_pattern_report(report));
}

Result<void> pattern_verdict(const std::vector<PatternMeshReport>& reports) {
  std::size_t failed = 0;
  std::string found;
  for (const auto& r : reports) {
    failed += r.failures.size();
    if (r.narrowing.verdict.kind != FaultKind::kNone && found.empty()) {
      found = r.metric + ": " + describe_verdict(r.narrowing.verdict, r.hosts);
    }
  }
  if (failed > 0) {
    return Error(ErrorCode::kSystem, "mesh", std::to_string(failed) + " pairs without a result");
  }
  if (!found.empty()) return Error(ErrorCode::kBelowThreshold, "mesh", found);
  return Ok();
}

} // namespace fabric::probes
