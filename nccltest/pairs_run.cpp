#include "nccltest/pairs_run.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "nccltest/data_check.h"
#include "nccltest/sweep.h"

namespace fabric::nccltest {
namespace {

constexpr int kPairRepetitions = 3;

// What every pair of a run measures.
struct PairCall {
  DataType type = DataType::kFloat;
  ReduceOp op = ReduceOp::kSum;
  std::size_t bytes = 0;
};

bool injected_slow(const FaultPlan& fault, std::size_t a, std::size_t b) {
  if (fault.slow_pair && static_cast<std::size_t>(fault.slow_pair->first) == a &&
      static_cast<std::size_t>(fault.slow_pair->second) == b) {
    return true;
  }
  return fault.slow_node && (static_cast<std::size_t>(*fault.slow_node) == a ||
                             static_cast<std::size_t>(*fault.slow_node) == b);
}

// One round on every rank: the round's pairs at once, each on a sub-communicator of its
// own, the slower rank's time of each pair gathered on rank 0 (the others get nothing).
Result<std::vector<PairMeasurement>> run_round(Session& s, const PairsPlan& plan,
                                               const probes::MeshRound& round, std::size_t number,
                                               const PairCall& pc) {
  const Options& o = s.options;
  const std::size_t elt = data_type_size(pc.type);
  const std::string coll(collective_name(o.collective));
  const int color = pair_color(plan, round, s.rank());
  Beat beat = s.progress.begin("pairs round " + std::to_string(number + 1), coll, pc.bytes);
  FABRIC_ASSIGN_OR_RETURN(std::unique_ptr<Engine> pair, s.engine->split(color, s.rank()));
  double seconds = 0;
  if (pair) {
    CollectiveCall call;
    call.collective = o.collective;
    call.type = pc.type;
    call.op = pc.op;
    call.root = 0;
    call.counts = collective_counts(o.collective, pc.bytes, elt, pair->size());
    FABRIC_TRY(fill_checked_input(*pair, call, check_spec(*pair, call, 0),
                                  [&] { s.progress.again(beat); }));
    for (int i = 0; i < o.warmup_iters; ++i)
      FABRIC_TRY(pair->run_once(call));
    TimingOptions timing;
    timing.iters = o.iters;
    timing.agg_iters = o.agg_iters;
    timing.blocking = o.blocking != 0;
    const auto& [a, b] = round[static_cast<std::size_t>(color)];
    if (injected_slow(s.fault, a, b)) timing.injected_delay = s.fault.slow_delay; // tests only
    // The best of a few timed loops: a healthy pair that hit a transient hiccup (another
    // job, a daemon) must not look slow; a slow link is slow every time.
    for (int rep = 0; rep < kPairRepetitions; ++rep) {
      FABRIC_ASSIGN_OR_RETURN(double t, pair->timed_run(call, timing));
      seconds = rep == 0 ? t : std::min(seconds, t);
    }
  }
  s.progress.end(beat);
  // Every rank (those sitting out too) reports: its pair and its time.
  FABRIC_ASSIGN_OR_RETURN(std::vector<double> all,
                          allgather_doubles(*s.group, {static_cast<double>(color), seconds}));
  std::vector<PairMeasurement> measured;
  if (s.rank() != 0) return measured;
  for (std::size_t i = 0; i < round.size(); ++i) {
    const auto& [a, b] = round[i];
    double slowest = 0;
    for (std::size_t r = 0; 2 * r < all.size(); ++r) {
      if (static_cast<int>(all[2 * r]) == static_cast<int>(i))
        slowest = std::max(slowest, all[2 * r + 1]);
    }
    const int ranks = static_cast<int>(plan.node_ranks[a].size() + plan.node_ranks[b].size());
    const std::size_t param = collective_counts(o.collective, pc.bytes, elt, ranks).param;
    PairMeasurement m;
    m.round = number;
    m.a = a;
    m.b = b;
    m.time_us = slowest * 1e6;
    m.busbw = bandwidth(o.collective, param, elt, slowest, ranks).busbw;
    measured.push_back(m);
  }
  return measured;
}

// Rounds travel from rank 0 as text: "a-b a-b ...", empty for "no more rounds".
std::string encode_round(const probes::MeshRound& round) {
  std::string out;
  for (const auto& [a, b] : round)
    out += (out.empty() ? "" : " ") + std::to_string(a) + "-" + std::to_string(b);
  return out;
}

Result<probes::MeshRound> decode_round(const std::string& text, std::size_t nodes) {
  probes::MeshRound round;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t a = 0, b = 0;
    int used = 0;
    if (std::sscanf(text.c_str() + pos, "%zu-%zu%n", &a, &b, &used) != 2 || a >= nodes ||
        b >= nodes || a == b) {
      return Error(ErrorCode::kInternal, "--pairs",
                   "rank 0 sent a follow-up round that is not pairs of nodes");
    }
    round.push_back({a, b});
    pos += static_cast<std::size_t>(used);
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
  }
  return round;
}

// A follow-up round as it runs: by rank, one pair at a time, all numbered as one round.
Result<std::vector<PairMeasurement>> run_follow_up(Session& s, const PairsPlan& plan,
                                                   const probes::MeshRound& round,
                                                   std::size_t number, const PairCall& pc) {
  std::vector<PairMeasurement> out;
  for (const probes::MeshRound& part : rounds_to_run(plan, round)) {
    FABRIC_ASSIGN_OR_RETURN(std::vector<PairMeasurement> m, run_round(s, plan, part, number, pc));
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

// Narrowing down after a pattern. Rank 0 decides each follow-up round (narrow_down) and
// sends it to every rank; all run it; an empty round ends it on every rank.
Result<void> narrow_pairs(Session& s, const PairsPlan& plan, const PairCall& pc,
                          PairsReport& report) {
  const std::size_t first_round = plan.rounds.size();
  if (s.rank() != 0) {
    for (std::size_t k = 0;; ++k) {
      FABRIC_ASSIGN_OR_RETURN(std::string text, s.group->broadcast(""));
      FABRIC_ASSIGN_OR_RETURN(probes::MeshRound round, decode_round(text, plan.nodes.size()));
      if (round.empty()) return {};
      FABRIC_TRY(run_follow_up(s, plan, round, first_round + k, pc));
    }
  }
  std::vector<probes::PairResult> pattern;
  for (const PairMeasurement& m : report.pairs)
    pattern.push_back({m.a, m.b, m.busbw, m.round + 1});
  std::vector<PairMeasurement> follow_ups;
  std::optional<Error> failed;
  std::size_t k = 0;
  auto run = [&](const probes::MeshRound& round, std::size_t) {
    std::vector<std::optional<double>> values(round.size());
    if (failed) return values;
    if (auto sent = s.group->broadcast(encode_round(round)); !sent.ok()) {
      failed = sent.error();
      return values;
    }
    auto m = run_follow_up(s, plan, round, first_round + k++, pc);
    if (!m.ok()) {
      failed = m.error();
      return values;
    }
    for (std::size_t i = 0; i < round.size(); ++i) {
      const std::size_t a = std::min(round[i].first, round[i].second);
      const std::size_t b = std::max(round[i].first, round[i].second);
      for (const PairMeasurement& p : *m)
        if (p.a == a && p.b == b) values[i] = p.busbw;
    }
    follow_ups.insert(follow_ups.end(), m->begin(), m->end());
    return values;
  };
  // The all-pairs rule's numbers, on the same scale: bandwidth noise is a factor.
  const probes::OutlierOptions rule;
  probes::NarrowingOptions options;
  options.better = probes::Better::kHigher;
  options.threshold = rule.threshold;
  options.min_relative = rule.min_relative;
  options.ratio_scale = true;
  auto narrowed = probes::narrow_down(pattern, first_round, plan.nodes,
                                      std::vector<std::string>(plan.nodes.size()), options, run);
  FABRIC_TRY(s.group->broadcast(encode_round({})));
  if (failed) return *failed;
  if (!narrowed.ok()) return narrowed.error();
  apply_narrowing(report, *narrowed, std::move(follow_ups));
  return {};
}

} // namespace

Result<PairsReport> run_pairs(Session& s, DataType type, ReduceOp op) {
  const Options& o = s.options;
  FABRIC_ASSIGN_OR_RETURN(PairsPlan plan, plan_pairs(s.rank_infos(), o.pairs_by, o.pairs_pattern));
  PairCall pc;
  pc.type = type;
  pc.op = op;
  pc.bytes = o.pairs_bytes.value_or(o.sweep.max_bytes);

  std::vector<PairMeasurement> measured;
  for (std::size_t round = 0; round < plan.rounds.size(); ++round) {
    FABRIC_ASSIGN_OR_RETURN(std::vector<PairMeasurement> m,
                            run_round(s, plan, plan.rounds[round], round, pc));
    measured.insert(measured.end(), m.begin(), m.end());
  }
  PairsReport header;
  header.collective = std::string(collective_name(o.collective));
  header.bytes = pc.bytes;
  header.type = type;
  header.op = prints_op(o.collective) ? std::string(reduce_op_name(op)) : "none";
  header.iters = o.iters;
  header.by = o.pairs_by;
  header.all_pairs = plan.pattern.spec.kind == probes::PatternKind::kAllPairs;
  header.pattern = probes::describe_plan(plan.pattern);
  PairsReport report = header;
  if (s.rank() == 0) {
    FABRIC_ASSIGN_OR_RETURN(report, assemble_pairs(plan, std::move(measured), std::move(header)));
  }
  if (!report.all_pairs) FABRIC_TRY(narrow_pairs(s, plan, pc, report));
  return report;
}

} // namespace fabric::nccltest
