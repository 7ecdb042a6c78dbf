// nccl-tests' per-iteration timing (-I 1, -K N): each timed iteration's time per operation
// on every rank, the slowest rank's per iteration, and the summary nccl-tests prints after
// each placement's #wrong (i_min, i_max, i_p99, i_cv%) over the iterations after the first
// -K. The statistics follow nccl-tests 2.19's computeIterStats: nearest-rank percentiles,
// the population standard deviation.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "common/result.h"
#include "nccltest/group.h"
#include "nccltest/report.h"

namespace fabric::nccltest {

// At most this many timed iterations (-n) with -I 1: every rank keeps one sample per
// iteration of a placement, and rank 0 one per iteration and row for the JSON report, so
// 100000 iterations cost 0.8 MB per rank and placement (and 100001 CUDA events per GPU).
inline constexpr int kMaxPerIterationIterations = 100000;
// nccl-tests' JSON lists every process's own samples ("per_process_max_times_us"); rank 0
// keeps them only while processes x iterations stay within this (8 MB per placement).
inline constexpr std::size_t kMaxPerProcessSamples = std::size_t{1} << 20;

// Index of the `percentile`th value of `n` sorted values by the nearest-rank rule, as
// nccl-tests' percentileIndex: min(n - 1, ceil(n * percentile / 100) - 1). `n` > 0.
std::size_t percentile_index(std::size_t n, int percentile);

// The summary of `times` (any unit; the result is in the same). Empty `times` gives zeros.
IterationStats iteration_stats(std::span<const double> times);

// Every process's per-iteration seconds per operation (`mine`, the same length on every
// process), reduced to the slowest process's per iteration, summarised after the first
// `skip`. Exchanged in slices so that no message carries more than about 256 KiB, whatever
// the number of processes or iterations. Collective over `group`.
Result<PerIteration> reduce_per_iteration(Group& group, const std::vector<double>& mine, int skip);

} // namespace fabric::nccltest
