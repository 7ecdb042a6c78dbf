// Finding the slow links and slow hosts in an all-pairs matrix.
//
// A cell's value is judged against its own row (the same source to every destination)
// and its own column (every source to the same destination), with robust statistics:
// the median, and the median absolute deviation (MAD) scaled by 1.4826 so that it
// estimates the standard deviation of normally distributed noise. A cell is flagged when
// it is worse than both its row's and its column's median by more than `threshold` MADs:
// one bad link stands out in both, while a host that is slow with everyone drags its whole
// row and column down, so its cells match their own row or column and are not flagged
// one by one. Such a host is found instead by comparing each host's row median (as a
// source) and column median (as a destination) with those of the other hosts, the same
// way, and is reported as a host.
//
// A perfectly uniform matrix has a MAD of 0, where any difference would be "infinitely"
// many MADs; the deviation must therefore also exceed `min_relative` of the median (10%
// by default), so run-to-run noise of a few percent is never flagged.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace fabric::probes {

// N x N results, [source][destination]; nullopt on the diagonal and for failed pairs.
using MeshMatrix = std::vector<std::vector<std::optional<double>>>;

// Which way is bad: bandwidth is bad when low, latency when high.
enum class Better { kHigher, kLower };

struct OutlierOptions {
  Better better = Better::kHigher;
  double threshold = 3.5;     // in scaled MADs
  double min_relative = 0.10; // the floor: a fraction of the median
};

struct RobustStats {
  double median = 0;
  double mad = 0; // scaled by 1.4826
  std::size_t count = 0;
};
// Median (the mean of the two middle values for an even count) and scaled MAD.
RobustStats robust_stats(std::vector<double> values);

struct FlaggedCell {
  std::size_t source = 0, destination = 0;
  double value = 0;
  double row_median = 0, column_median = 0;
  std::string reason; // "12.3 is 87% below its row's median 95 and ..."
};

struct FlaggedHost {
  std::size_t host = 0;
  bool as_source = false, as_destination = false;
  std::optional<double> source_median, destination_median;      // this host's row / column
  double hosts_source_median = 0, hosts_destination_median = 0; // across all hosts
  std::string reason;
};

struct OutlierReport {
  std::vector<FlaggedHost> hosts; // by host index
  std::vector<FlaggedCell> cells; // by source, then destination
};

// Errors for a matrix that is not square, a non-finite value, or options out of range.
// Hosts without any result (every pair failed) have no median and are never flagged here:
// failures are reported as failures.
Result<OutlierReport> find_outliers(const MeshMatrix& matrix, const OutlierOptions& options = {});

} // namespace fabric::probes
