#include "nccltest/sweep.h"

#include <algorithm>
#include <numeric>

#include "nccltest/data_check.h"
#include "nccltest/memory_plan.h"
#include "nccltest/outputs.h"
#include "nccltest/per_iteration.h"
#include "nccltest/sizes.h"

namespace fabric::nccltest {
namespace {

// What each rank reports after a placement, in this order, as doubles.
enum Field { kTime, kWrong, kChecked, kFirstIndex, kFirstGot, kFirstExpected, kFields };

// Every local rank's input generated for one checked operation (the engine drives all of
// its GPUs' collectives at once, so every GPU's input must be in place before it runs).
Result<void> fill_every_local(SweepContext& c, CollectiveCall call, uint64_t seed,
                              const OnChunk& again) {
  for (call.local = 0; call.local < c.engine.local_ranks(); ++call.local) {
    FABRIC_TRY(fill_checked_input(c.engine, call, check_spec(c.engine, call, seed), again));
  }
  return Ok();
}

// One checked repetition on this process: one outcome per local rank, in rank order.
Result<std::vector<CheckOutcome>> check_once(SweepContext& c, CollectiveCall call, uint64_t seed,
                                             std::size_t row_bytes) {
  Beat beat = c.progress.begin("check", std::string(collective_name(call.collective)), row_bytes,
                               call.in_place);
  const OnChunk again = [&] { c.progress.again(beat); };
  FABRIC_TRY(fill_every_local(c, call, seed, again));
  FABRIC_TRY(c.engine.run_once(call));
  std::vector<CheckOutcome> outcomes;
  for (call.local = 0; call.local < c.engine.local_ranks(); ++call.local) {
    const CheckSpec spec = check_spec(c.engine, call, seed);
    if (c.fault.corrupt_rank && *c.fault.corrupt_rank == spec.rank) {
      FABRIC_TRY(corrupt_first_output(c.engine, call)); // test-only fault
    }
    FABRIC_ASSIGN_OR_RETURN(CheckOutcome outcome,
                            verify_checked_output(c.engine, call, spec, again));
    outcomes.push_back(outcome);
  }
  c.progress.end(beat);
  return outcomes;
}

} // namespace

double aggregate_time(const std::vector<double>& t, int average) {
  if (t.empty()) return 0;
  switch (average) {
  case 0: return t.front();
  case 2: return *std::min_element(t.begin(), t.end());
  case 3: return *std::max_element(t.begin(), t.end());
  default: return std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
  }
}

Result<PlacementOutcome> measure_placement(SweepContext& c, const CollectiveCall& call,
                                           std::size_t row_bytes, const TimingOptions& timing) {
  const std::string coll(collective_name(call.collective));
  const bool checked =
      c.options.check_iters > 0 && (!call.in_place || checks_in_place(call.collective));
  // With checks, valid data before timing, as nccl-tests' initData; with -c 0 the buffers
  // are timed as allocated, as nccl-tests does: GPU reductions run at the same speed
  // whatever the values, and a fill costs what -c 0 is there to avoid.
  if (checked) {
    Beat beat = c.progress.begin("fill", coll, row_bytes, call.in_place);
    FABRIC_TRY(fill_every_local(c, call, 0, [&] { c.progress.again(beat); }));
    c.progress.end(beat);
  }
  if (c.fault.stall_rank && *c.fault.stall_rank == c.group.rank() &&
      row_bytes >= c.fault.stall_from_bytes) {
    stall_for_test(c.abort); // test-only fault: the watchdog is expected to end the run
    return Error(ErrorCode::kSystem, "the stall fault", "ended without being aborted");
  }
  Beat beat = c.progress.begin("timed loop", coll, row_bytes, call.in_place);
  std::vector<double> iterations;
  TimingOptions timed = timing;
  if (c.options.per_iteration) timed.iteration_seconds = &iterations;
  FABRIC_ASSIGN_OR_RETURN(double seconds, c.engine.timed_run(call, timed));
  c.progress.end(beat);

  PlacementOutcome out;
  if (c.options.per_iteration) {
    // Every process sends one time per iteration, even from an engine that timed none.
    iterations.resize(static_cast<std::size_t>(timing.iters), 0.0);
    FABRIC_ASSIGN_OR_RETURN(
        out.iterations, reduce_per_iteration(c.group, iterations, c.options.per_iteration_skip));
  }
  out.result.wrong = checked ? std::optional<int64_t>(0) : std::nullopt;
  std::vector<double> all;
  const int repetitions = checked ? c.options.check_iters : 1;
  const auto locals = static_cast<std::size_t>(c.engine.local_ranks());
  for (int rep = 0; rep < repetitions; ++rep) {
    // Each local rank's fields in rank order, so that the gathered vector is in rank order.
    std::vector<double> mine(kFields * locals, 0.0);
    for (std::size_t l = 0; l < locals; ++l)
      mine[l * kFields + kTime] = seconds;
    if (checked) {
      FABRIC_ASSIGN_OR_RETURN(std::vector<CheckOutcome> outcomes,
                              check_once(c, call, static_cast<uint64_t>(rep) + 1, row_bytes));
      for (std::size_t l = 0; l < locals; ++l) {
        const CheckOutcome& o = outcomes[l];
        double* f = &mine[l * kFields];
        f[kWrong] = static_cast<double>(o.wrong);
        f[kChecked] = static_cast<double>(o.checked);
        f[kFirstIndex] = static_cast<double>(o.first_index);
        f[kFirstGot] = o.first_got;
        f[kFirstExpected] = o.first_expected;
      }
    }
    FABRIC_ASSIGN_OR_RETURN(all, allgather_doubles(c.group, mine));
    int64_t wrong = 0;
    for (std::size_t r = 0; r * kFields < all.size(); ++r) {
      const double* f = &all[r * kFields];
      if (f[kWrong] == 0) continue;
      wrong += static_cast<int64_t>(f[kWrong]);
      ++out.failed_checks;
      if (c.group.rank() != 0) continue;
      RankCheckFailure failure;
      failure.rank = static_cast<int>(r);
      if (r < c.ranks.size()) {
        failure.host = c.ranks[r].host;
        failure.device = c.ranks[r].device;
      }
      failure.bytes = row_bytes;
      failure.type = call.type;
      failure.op = prints_op(call.collective) ? std::string(reduce_op_name(call.op)) : "none";
      failure.in_place = call.in_place;
      failure.wrong = static_cast<std::size_t>(f[kWrong]);
      failure.checked = static_cast<std::size_t>(f[kChecked]);
      failure.first_index = static_cast<std::size_t>(f[kFirstIndex]);
      failure.first_got = f[kFirstGot];
      failure.first_expected = f[kFirstExpected];
      out.failures.push_back(failure);
    }
    if (checked) out.result.wrong = wrong;
    if (wrong > 0) break; // as nccl-tests: the first wrong repetition ends the checks
  }
  for (std::size_t r = 0; r * kFields < all.size(); ++r) {
    out.result.rank_time_us.push_back(all[r * kFields + kTime] * 1e6);
  }
  const double t = aggregate_time(out.result.rank_time_us, c.options.average);
  out.result.time_us = t;
  Bandwidth bw = bandwidth(call.collective, call.counts.param, data_type_size(call.type), t / 1e6,
                           c.engine.size());
  out.result.algbw = bw.algbw;
  out.result.busbw = bw.busbw;
  return out;
}

Result<SweepResult> run_sweep(SweepContext& c, DataType type, ReduceOp op, int root,
                              const std::function<void(const SizeRow&)>& on_row) {
  const Options& o = c.options;
  const int n = c.engine.size();
  const std::size_t elt = data_type_size(type);
  const std::string coll(collective_name(o.collective));

  CollectiveCall call;
  call.collective = o.collective;
  call.type = type;
  call.op = op;
  call.root = root;
  call.unalign = static_cast<std::size_t>(o.unalign);

  Beat warm = c.progress.begin("warm-up", coll);
  for (std::size_t bytes : warmup_sizes(o.sweep)) {
    call.counts = collective_counts(o.collective, bytes, elt, n);
    call.in_place = false;
    for (int i = 0; i < o.warmup_iters; ++i)
      FABRIC_TRY(c.engine.run_once(call));
  }
  c.progress.end(warm);

  TimingOptions timing;
  timing.iters = o.iters;
  timing.agg_iters = o.agg_iters;
  timing.graph_launches = o.graph_launches;
  timing.blocking = o.blocking;
  timing.report_cputime = o.report_cputime;
  timing.rotate_bytes = std::min(o.sweep.max_bytes, buffer_size(o, o.sweep.max_bytes, n));

  SweepResult result;
  // -N: the sizes again, each cycle printed, after one warm-up (nccl-tests' TimeTest).
  for (long cycle = 0; o.run_cycles == 0 || cycle < o.run_cycles; ++cycle) {
    for (std::size_t bytes : sweep_sizes(o.sweep)) {
      call.counts = collective_counts(o.collective, bytes, elt, n);
      SizeRow row;
      row.bytes = call.counts.printed_bytes(elt);
      row.count = call.counts.param;
      row.type = type;
      row.op = prints_op(o.collective) ? std::string(reduce_op_name(op)) : "none";
      row.root = uses_root(o.collective) ? root : -1;
      for (bool in_place : {false, true}) {
        call.in_place = in_place;
        FABRIC_ASSIGN_OR_RETURN(PlacementOutcome p, measure_placement(c, call, row.bytes, timing));
        (in_place ? row.in_place : row.out_of_place) = std::move(p.result);
        (in_place ? row.in_place_iterations : row.out_of_place_iterations) =
            std::move(p.iterations);
        result.out_of_bounds += p.failed_checks;
        for (auto& f : p.failures)
          result.failures.push_back(std::move(f));
      }
      if (o.report_timestamps) row.timestamp = now_text();
      if (c.group.rank() == 0 && on_row) on_row(row);
      result.rows.push_back(std::move(row));
    }
  }
  return result;
}

} // namespace fabric::nccltest
