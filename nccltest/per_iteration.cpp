#include "nccltest/per_iteration.h"

#include <algorithm>
#include <cmath>

namespace fabric::nccltest {
namespace {

// Samples per process and exchange: 32768 doubles (256 KiB) over all processes together.
constexpr std::size_t kSliceDoubles = 32768;

} // namespace

std::size_t percentile_index(std::size_t n, int percentile) {
  const std::size_t rank = (n * static_cast<std::size_t>(percentile) + 99) / 100;
  return std::min(n - 1, rank > 0 ? rank - 1 : 0);
}

IterationStats iteration_stats(std::span<const double> times) {
  IterationStats s;
  if (times.empty()) return s;
  std::vector<double> sorted(times.begin(), times.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = sorted[n / 2];
  s.p95 = sorted[percentile_index(n, 95)];
  s.p99 = sorted[percentile_index(n, 99)];
  double sum = 0;
  for (double t : sorted)
    sum += t;
  s.avg = sum / static_cast<double>(n);
  double squares = 0;
  for (double t : sorted)
    squares += (t - s.avg) * (t - s.avg);
  s.stdev = std::sqrt(squares / static_cast<double>(n));
  s.cv_pct = s.avg > 0 ? s.stdev / s.avg * 100.0 : 0.0;
  return s;
}

Result<PerIteration> reduce_per_iteration(Group& group, const std::vector<double>& mine, int skip) {
  const auto processes = static_cast<std::size_t>(group.size());
  const std::size_t n = mine.size();
  PerIteration out;
  out.skipped = std::clamp(skip, 0, static_cast<int>(n > 0 ? n - 1 : 0));
  out.times_us.assign(n, 0.0);
  const bool keep_each =
      group.rank() == 0 && processes > 1 && processes * n <= kMaxPerProcessSamples;
  if (keep_each) out.per_process_us.assign(processes, std::vector<double>(n, 0.0));
  const std::size_t slice = std::max<std::size_t>(1, kSliceDoubles / processes);
  for (std::size_t first = 0; first < n; first += slice) {
    const std::size_t count = std::min(slice, n - first);
    std::vector<double> part(mine.begin() + static_cast<std::ptrdiff_t>(first),
                             mine.begin() + static_cast<std::ptrdiff_t>(first + count));
    FABRIC_ASSIGN_OR_RETURN(std::vector<double> all, allgather_doubles(group, part));
    for (std::size_t p = 0; p < processes; ++p) {
      for (std::size_t i = 0; i < count; ++i) {
        const double us = all[p * count + i] * 1e6;
        double& slowest = out.times_us[first + i];
        slowest = p == 0 ? us : std::max(slowest, us);
        if (keep_each) out.per_process_us[p][first + i] = us;
      }
    }
  }
  out.stats = iteration_stats(
      std::span<const double>(out.times_us).subspan(static_cast<std::size_t>(out.skipped)));
  return out;
}

} // namespace fabric::nccltest
