#include "nccltest/pairs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "libs/pair_schedules/outliers.h"
#include "nccltest/text_report.h"

namespace fabric::nccltest {

Result<PairsPlan> plan_pairs(const std::vector<RankInfo>& ranks, PairsBy by,
                             const probes::PatternSpec& pattern) {
  PairsPlan plan;
  plan.by = by;
  std::map<std::string, int> index;
  for (const RankInfo& r : ranks) {
    std::string name =
        by == PairsBy::kHost ? r.host : "rank" + std::to_string(r.rank) + "@" + r.host;
    auto [it, fresh] = index.try_emplace(name, static_cast<int>(plan.nodes.size()));
    if (fresh) {
      plan.nodes.push_back(name);
      plan.node_ranks.emplace_back();
    }
    plan.node_ranks[it->second].push_back(r.rank);
    if (plan.node_of_rank.size() <= static_cast<std::size_t>(r.rank)) {
      plan.node_of_rank.resize(r.rank + 1, -1);
    }
    plan.node_of_rank[r.rank] = it->second;
  }
  // Nodes have no place in the fabric here: the patterns that need leaves refuse, naming it.
  FABRIC_ASSIGN_OR_RETURN(
      plan.pattern,
      probes::plan_pattern(pattern, std::vector<std::string>(plan.nodes.size()), /*ordered=*/false)
          .context("--pairs-pattern"));
  for (const probes::MeshRound& round : plan.pattern.rounds)
    for (probes::MeshRound& part : rounds_to_run(plan, round))
      plan.rounds.push_back(std::move(part));
  return plan;
}

std::vector<probes::MeshRound> rounds_to_run(const PairsPlan& plan,
                                             const probes::MeshRound& round) {
  std::vector<probes::MeshRound> out;
  if (plan.by == PairsBy::kRank) {
    // Ranks of one host share its CPUs, memory and NICs: two pairs at once would disturb
    // each other, so each pair gets a round of its own.
    for (const probes::MeshPair& pair : round)
      out.push_back({pair});
  } else if (!round.empty()) {
    out.push_back(round);
  }
  // Pairs as (lower, higher), as the measurements and the matrix expect.
  for (probes::MeshRound& r : out)
    for (probes::MeshPair& pair : r)
      if (pair.first > pair.second) std::swap(pair.first, pair.second);
  return out;
}

int pair_color(const PairsPlan& plan, const probes::MeshRound& pairs, int rank) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= plan.node_of_rank.size()) return -1;
  const auto node = static_cast<std::size_t>(plan.node_of_rank[rank]);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (pairs[i].first == node || pairs[i].second == node) return static_cast<int>(i);
  }
  return -1;
}

int pair_color(const PairsPlan& plan, std::size_t round, int rank) {
  return round < plan.rounds.size() ? pair_color(plan, plan.rounds[round], rank) : -1;
}

namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

// Zero (a pair that moved nothing measurable) stays finite and far below any real pair.
double log_busbw(double busbw) {
  return std::log(std::max(busbw, 1e-12));
}

std::string percent_below(double value, double median) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", median > 0 ? 100.0 * (median - value) / median : 0.0);
  return text;
}

} // namespace

Result<PairsReport> assemble_pairs(const PairsPlan& plan, std::vector<PairMeasurement> pairs,
                                   PairsReport report) {
  const std::size_t n = plan.nodes.size();
  report.nodes = plan.nodes;
  report.pairs = std::move(pairs);
  probes::MeshReport& mesh = report.mesh;
  mesh.hosts = plan.nodes;
  mesh.metric = report.collective + "_busbw";
  mesh.unit = "GB/s";
  mesh.better = probes::Better::kHigher;
  mesh.matrix.assign(n, std::vector<std::optional<double>>(n));
  std::vector<double> all, all_log;
  for (const PairMeasurement& p : report.pairs) {
    mesh.matrix[p.a][p.b] = p.busbw;
    mesh.matrix[p.b][p.a] = p.busbw;
    all.push_back(p.busbw);
    all_log.push_back(log_busbw(p.busbw));
  }
  // Every pair is judged against every other pair, not only against its row: with few
  // nodes a row holds two or three values, too few for a robust spread of their own.
  // The judgement is on the logarithm of busbw: bandwidth noise is a factor, not an
  // offset, and on a linear scale pairs that spread over a third of their median (ranks
  // sharing a node's cores) hide even a pair that moved next to nothing, since no value
  // can fall further below the median than the median itself.
  const probes::OutlierOptions rule;
  const probes::RobustStats everyone = probes::robust_stats(all);
  const probes::RobustStats everyone_log = probes::robust_stats(all_log);
  const double limit =
      std::max(rule.threshold * everyone_log.mad, -std::log(1.0 - rule.min_relative));
  auto slow = [&](double v) {
    return everyone_log.count > 0 && everyone_log.median - log_busbw(v) > limit;
  };
  const std::string against =
      "the median of all pairs " + number(everyone.median) + " (limit: " + number(rule.threshold) +
      " MADs of the pairs' log busbw, and at least " + number(100 * rule.min_relative) + "% below)";

  // A node is slow when its typical pair is: most of its pairs are slow, whoever the partner.
  std::vector<bool> node_slow(n, false);
  for (std::size_t node = 0; node < n; ++node) {
    std::vector<double> values;
    for (std::size_t other = 0; other < n; ++other) {
      if (mesh.matrix[node][other]) values.push_back(*mesh.matrix[node][other]);
    }
    NodeStanding s;
    s.node = node;
    s.median_busbw = probes::robust_stats(values).median;
    s.flagged = !values.empty() && slow(s.median_busbw);
    node_slow[node] = s.flagged;
    if (s.flagged) {
      probes::FlaggedHost h;
      h.host = node;
      h.as_source = h.as_destination = true;
      h.source_median = h.destination_median = s.median_busbw;
      h.hosts_source_median = h.hosts_destination_median = everyone.median;
      h.reason = "the median of its pairs " + number(s.median_busbw) + " is " +
                 percent_below(s.median_busbw, everyone.median) + " below " + against;
      mesh.outliers.hosts.push_back(h);
    }
    report.ranking.push_back(s);
  }
  // A slow pair between two nodes that are fine with everyone else: the link between them.
  for (const PairMeasurement& p : report.pairs) {
    if (!slow(p.busbw) || node_slow[p.a] || node_slow[p.b]) continue;
    probes::FlaggedCell c;
    c.source = p.a;
    c.destination = p.b;
    c.value = p.busbw;
    c.row_median = report.ranking[p.a].median_busbw;
    c.column_median = report.ranking[p.b].median_busbw;
    c.reason =
        number(p.busbw) + " is " + percent_below(p.busbw, everyone.median) + " below " + against;
    mesh.outliers.cells.push_back(c);
  }
  std::sort(
      mesh.outliers.cells.begin(), mesh.outliers.cells.end(),
      [](const probes::FlaggedCell& x, const probes::FlaggedCell& y) { return x.value < y.value; });
  std::stable_sort(
      report.ranking.begin(), report.ranking.end(),
      [](const NodeStanding& a, const NodeStanding& b) { return a.median_busbw < b.median_busbw; });

  if (!mesh.outliers.hosts.empty()) {
    std::string names;
    for (const probes::FlaggedHost& h : mesh.outliers.hosts) {
      names += (names.empty() ? "" : ", ") + plan.nodes[h.host];
    }
    report.verdict = (mesh.outliers.hosts.size() == 1 ? "slow node " : "slow nodes ") + names +
                     ": " + mesh.outliers.hosts.front().reason;
  } else if (!mesh.outliers.cells.empty()) {
    const probes::FlaggedCell& c = mesh.outliers.cells.front(); // the slowest
    report.verdict =
        "slow pair " + plan.nodes[c.source] + " - " + plan.nodes[c.destination] + ": " + c.reason;
  } else {
    report.verdict = "no slow node or pair: every pair is within the noise of the others";
  }
  return report;
}

void apply_narrowing(PairsReport& report, const probes::Narrowing& narrowing,
                     std::vector<PairMeasurement> follow_ups) {
  probes::MeshReport& mesh = report.mesh;
  for (const PairMeasurement& p : follow_ups) {
    if (p.a < mesh.matrix.size() && p.b < mesh.matrix.size() && !mesh.matrix[p.a][p.b]) {
      mesh.matrix[p.a][p.b] = mesh.matrix[p.b][p.a] = p.busbw;
    }
  }
  report.follow_ups = std::move(follow_ups);
  mesh.outliers = {};
  for (NodeStanding& s : report.ranking)
    s.flagged = false;
  const probes::FaultVerdict& v = narrowing.verdict;
  const std::string reason = probes::describe_verdict(v, report.nodes) + "; the pattern's median " +
                             number(narrowing.baseline) + ", low below " +
                             number(narrowing.baseline - narrowing.limit);
  if (v.kind == probes::FaultKind::kNode && v.hosts.size() == 1) {
    probes::FlaggedHost h;
    h.host = v.hosts[0];
    h.as_source = h.as_destination = true;
    h.hosts_source_median = h.hosts_destination_median = narrowing.baseline;
    h.reason = reason;
    for (NodeStanding& s : report.ranking) {
      if (s.node != h.host) continue;
      s.flagged = true;
      h.source_median = h.destination_median = s.median_busbw;
    }
    mesh.outliers.hosts.push_back(h);
  } else if (v.kind == probes::FaultKind::kPath && v.hosts.size() == 2) {
    probes::FlaggedCell c;
    c.source = std::min(v.hosts[0], v.hosts[1]);
    c.destination = std::max(v.hosts[0], v.hosts[1]);
    c.value = std::numeric_limits<double>::infinity();
    for (const auto* list : {&report.pairs, &report.follow_ups})
      for (const PairMeasurement& p : *list)
        if (p.a == c.source && p.b == c.destination) c.value = std::min(c.value, p.busbw);
    if (!std::isfinite(c.value)) c.value = 0;
    c.reason = reason;
    mesh.outliers.cells.push_back(c);
  }
  report.verdict = probes::describe_verdict(v, report.nodes);
}

std::string render_pairs_text(const PairsReport& r) {
  std::string out;
  char line[512];
  const char* nodes = r.by == PairsBy::kHost ? "nodes" : "ranks";
  if (r.all_pairs) {
    std::snprintf(line, sizeof line,
                  "# Pairs: %s %zu B %s %s on every pair of %zu %s, %d iterations each\n",
                  r.collective.c_str(), r.bytes, std::string(data_type_name(r.type)).c_str(),
                  r.op.c_str(), r.nodes.size(), nodes, r.iters);
  } else {
    std::snprintf(line, sizeof line,
                  "# Pairs: %s %zu B %s %s over %zu %s, %d iterations each, %s\n",
                  r.collective.c_str(), r.bytes, std::string(data_type_name(r.type)).c_str(),
                  r.op.c_str(), r.nodes.size(), nodes, r.iters, r.pattern.c_str());
  }
  out += line;
  std::snprintf(line, sizeof line, "# %6s  %-20s  %-20s  %10s  %10s\n", "round", "node A", "node B",
                "time(us)", "busbw(GB/s)");
  out += line;
  auto rows = [&](const std::vector<PairMeasurement>& list) {
    for (const PairMeasurement& p : list) {
      std::snprintf(line, sizeof line, "# %6zu  %-20s  %-20s  %10s  %10s\n", p.round + 1,
                    r.nodes[p.a].c_str(), r.nodes[p.b].c_str(), fixed_field(p.time_us, 10).c_str(),
                    fixed_field(p.busbw, 10).c_str());
      out += line;
    }
  };
  rows(r.pairs);
  if (!r.follow_ups.empty()) {
    out += "# Follow-up rounds, narrowing down:\n";
    rows(r.follow_ups);
  }
  out += "# Nodes by the median busbw of their pairs, slowest first:\n";
  for (const NodeStanding& s : r.ranking) {
    std::snprintf(line, sizeof line, "#   %-20s  %10s GB/s%s\n", r.nodes[s.node].c_str(),
                  fixed_field(s.median_busbw, 10).c_str(), s.flagged ? "  SLOW" : "");
    out += line;
  }
  for (const probes::FlaggedCell& c : r.mesh.outliers.cells) {
    out += "# Slow pair: " + r.nodes[c.source] + " - " + r.nodes[c.destination] + ": " + c.reason +
           "\n";
  }
  out += "# Verdict: " + r.verdict + "\n";
  return out;
}

} // namespace fabric::nccltest
