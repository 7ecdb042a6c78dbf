#include "nccltest/pairs_run.h"

#include <algorithm>

#include "nccltest/data_check.h"
#include "nccltest/sweep.h"

namespace fabric::nccltest {
namespace {

constexpr int kPairRepetitions = 3;

} // namespace

Result<PairsReport> run_pairs(Session& s, DataType type, ReduceOp op) {
  const Options& o = s.options;
  PairsPlan plan = plan_pairs(s.rank_infos(), o.pairs_by);
  const std::size_t bytes = o.pairs_bytes.value_or(o.sweep.max_bytes);
  const std::size_t elt = data_type_size(type);
  const std::string coll(collective_name(o.collective));

  std::vector<PairMeasurement> measured;
  for (std::size_t round = 0; round < plan.rounds.size(); ++round) {
    const int color = pair_color(plan, round, s.rank());
    Beat beat = s.progress.begin("pairs round " + std::to_string(round + 1), coll, bytes);
    FABRIC_ASSIGN_OR_RETURN(std::unique_ptr<Engine> pair, s.engine->split(color, s.rank()));
    double seconds = 0;
    if (pair) {
      CollectiveCall call;
      call.collective = o.collective;
      call.type = type;
      call.op = op;
      call.root = 0;
      call.counts = collective_counts(o.collective, bytes, elt, pair->size());
      FABRIC_TRY(fill_checked_input(*pair, call, check_spec(*pair, call, 0),
                                    [&] { s.progress.again(beat); }));
      for (int i = 0; i < o.warmup_iters; ++i)
        FABRIC_TRY(pair->run_once(call));
      TimingOptions timing;
      timing.iters = o.iters;
      timing.agg_iters = o.agg_iters;
      timing.blocking = o.blocking != 0;
      const auto& [a, b] = plan.rounds[round][static_cast<std::size_t>(color)];
      if (s.fault.slow_pair && static_cast<std::size_t>(s.fault.slow_pair->first) == a &&
          static_cast<std::size_t>(s.fault.slow_pair->second) == b) {
        timing.injected_delay = s.fault.slow_delay; // test-only fault: a slow link
      }
      // The best of a few timed loops: a healthy pair that hit a transient hiccup (another
      // job, a daemon) must not look slow; a slow link is slow every time.
      for (int rep = 0; rep < kPairRepetitions; ++rep) {
        FABRIC_ASSIGN_OR_RETURN(double t, pair->timed_run(call, timing));
        seconds = rep == 0 ? t : std::min(seconds, t);
      }
    }
    s.progress.end(beat);
    // Every rank (those sitting out too) reports: its node and its time.
    FABRIC_ASSIGN_OR_RETURN(std::vector<double> all,
                            allgather_doubles(*s.group, {static_cast<double>(color), seconds}));
    if (s.rank() != 0) continue;
    for (std::size_t i = 0; i < plan.rounds[round].size(); ++i) {
      const auto& [a, b] = plan.rounds[round][i];
      double slowest = 0;
      for (std::size_t r = 0; 2 * r < all.size(); ++r) {
        if (static_cast<int>(all[2 * r]) == static_cast<int>(i))
          slowest = std::max(slowest, all[2 * r + 1]);
      }
      const int ranks = static_cast<int>(plan.node_ranks[a].size() + plan.node_ranks[b].size());
      const std::size_t param = collective_counts(o.collective, bytes, elt, ranks).param;
      PairMeasurement m;
      m.round = round;
      m.a = a;
      m.b = b;
      m.time_us = slowest * 1e6;
      m.busbw = bandwidth(o.collective, param, elt, slowest, ranks).busbw;
      measured.push_back(m);
    }
  }
  PairsReport header;
  header.collective = coll;
  header.bytes = bytes;
  header.type = type;
  header.op = prints_op(o.collective) ? std::string(reduce_op_name(op)) : "none";
  header.iters = o.iters;
  header.by = o.pairs_by;
  if (s.rank() != 0) return header;
  return assemble_pairs(plan, std::move(measured), std::move(header));
}

} // namespace fabric::nccltest
