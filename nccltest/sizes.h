// The message sizes of a run, as nccl-tests walks them: from -b to -e, multiplying by -f
// (when it is above 1) or adding -i; warm-up at every power-of-two step from -b to -e.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nccltest/collectives.h"

namespace fabric::nccltest {

struct SizeSweep {
  std::size_t min_bytes = 32u << 20; // nccl-tests' defaults
  std::size_t max_bytes = 32u << 20;
  std::size_t step_bytes = 1u << 20;
  std::size_t step_factor = 1; // > 1: geometric steps, else step_bytes
};

// The sizes to measure. The caller has validated the sweep (validate_sweep).
std::vector<std::size_t> sweep_sizes(const SizeSweep& sweep);
// The warm-up sizes: min, 2 min, 4 min, ... up to max, as nccl-tests warms up.
std::vector<std::size_t> warmup_sizes(const SizeSweep& sweep);

// Errors for a sweep that is empty or never ends; each names the option and its value.
// `max_sizes` bounds the number of steps (a huge -e with a tiny -i).
Result<void> validate_sweep(const SizeSweep& sweep, std::size_t max_sizes = 100000);

// One size whose message differs from what was asked, because the collective's counts are
// whole elements (all_gather, reduce_scatter and alltoall: whole 16-byte blocks per rank).
struct RoundedSize {
  std::size_t requested = 0;
  std::size_t used = 0; // the size column nccl-tests prints for it
};
std::vector<RoundedSize> rounded_sizes(const std::vector<std::size_t>& sizes, Collective c,
                                       DataType t, int nranks);
// "sizes rounded as nccl-tests does (whole 16-byte blocks per rank for all_gather over 4
// ranks): 8 -> 0, 100 -> 64"; "" when nothing was rounded. Lists at most `max_listed`.
std::string describe_rounding(const std::vector<RoundedSize>& rounded, Collective c, DataType t,
                              int nranks, std::size_t max_listed = 6);

} // namespace fabric::nccltest
