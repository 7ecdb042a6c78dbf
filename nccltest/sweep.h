// One nccl-tests "TimeTest": warm-up, then for every size an out-of-place and an in-place
// measurement, each a timed loop followed by the per-rank check. Every rank runs this;
// rank 0 receives the rows (to print as they complete) and the per-rank failures.
#pragma once

#include <functional>
#include <vector>

#include "nccltest/engine.h"
#include "nccltest/fault.h"
#include "nccltest/group.h"
#include "nccltest/options.h"
#include "nccltest/progress.h"
#include "nccltest/report.h"

namespace fabric::nccltest {

struct SweepContext {
  const Options& options;
  Engine& engine;
  Group& group;
  Progress& progress;
  const FaultPlan& fault;
  const std::vector<RankInfo>& ranks;  // rank 0 names failing ranks with these
  const AbortRequest* abort = nullptr; // what the stall fault waits for
};

struct SweepResult {
  std::vector<SizeRow> rows;
  std::vector<RankCheckFailure> failures;
  int64_t out_of_bounds = 0; // (rank, size, placement) checks with a wrong element
};

// Runs the sizes of `options.sweep` for one type, operation and root. `on_row` is called on
// rank 0 as each row completes.
Result<SweepResult> run_sweep(SweepContext& context, DataType type, ReduceOp op, int root,
                              const std::function<void(const SizeRow&)>& on_row);

// One timed placement of one size: `timing` as given, checks as options say. The result's
// time and bandwidths are aggregated over the engine's ranks (-a); failures are filled on
// the group's rank 0.
struct PlacementOutcome {
  PlacementResult result;
  std::vector<RankCheckFailure> failures;
  int64_t failed_checks = 0;
  std::optional<PerIteration> iterations; // -I 1
};
Result<PlacementOutcome> measure_placement(SweepContext& context, const CollectiveCall& call,
                                           std::size_t row_bytes, const TimingOptions& timing);

// -a: 0 rank 0's time, 1 the mean, 2 the minimum, 3 the maximum.
double aggregate_time(const std::vector<double>& rank_times, int average);

} // namespace fabric::nccltest
