// Summary statistics for latency samples and the bandwidth arithmetic every probe shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/json.h"

namespace fabric::probes {

struct LatencySummary {
  double min = 0, p50 = 0, p99 = 0, p999 = 0, max = 0, mean = 0, stdev = 0;
  std::size_t count = 0; // 0: no samples, every other field is 0
};

// Percentiles by the nearest-rank method: the p-th percentile is the sample at 1-based
// rank ceil(p/100 * n) of the sorted samples, so it is always a measured value (no
// interpolation), and p50 of an even count is the lower middle sample.
//
// perftest (print_report_lat) sorts its samples, drops the two largest, then reads the
// 0-based index ceil(p * n), one rank above nearest-rank, and averages the two middle
// samples for its median ("t_typical"). Ours keeps every sample, so max is the true
// maximum; expect p99/p99.9 to differ from perftest's by at most one sample's rank.
//
// stdev is the sample standard deviation (divides by n - 1; 0 for a single sample).
LatencySummary summarize(std::vector<double> samples);

// The value at `percentile` (0 < percentile <= 100) of samples sorted ascending, by the
// nearest-rank method above; 0 for no samples.
double nearest_rank(const std::vector<double>& sorted, double percentile);

// Bandwidth: bits and bytes per second in decimal units (1 Gb/s = 1e9 bit/s, as link
// speeds are quoted; 1 GB/s = 1e9 byte/s) and the message rate in millions per second.
// A non-positive duration gives 0.
double gbps(uint64_t bytes, double seconds);
double gbytes_per_s(uint64_t bytes, double seconds);
double mpps(uint64_t messages, double seconds);

struct Bandwidth {
  double gbps = 0;
  double gbytes_per_s = 0;
  double mpps = 0;
};
Bandwidth bandwidth(uint64_t bytes, uint64_t messages, double seconds);

// Writes the summary's fields into the object being written, with `_us` names
// (samples in microseconds): "count", "min_us", "p50_us", "p99_us", "p999_us", "max_us",
// "mean_us", "stdev_us".
void write_latency_fields(json::Writer& out, const LatencySummary& summary);
// Writes "avg_gbps", "avg_gbytes_per_s", "msg_rate_mpps" into the object being written.
void write_bandwidth_fields(json::Writer& out, const Bandwidth& bw);

} // namespace fabric::probes
