#include "probes/stats.h"

#include <algorithm>
#include <cmath>

namespace fabric::probes {

double nearest_rank(const std::vector<double>& sorted, double percentile) {
  if (sorted.empty()) return 0;
  const double n = static_cast<double>(sorted.size());
  // A rank that is a whole number must not round up because of binary fractions
  // (99.9 / 100 * 1000 = 999.0000000000001): allow a relative error far above a double's
  // and far below the fraction any real percentile of a real count leaves.
  const double exact = percentile / 100.0 * n;
  double rank = std::ceil(exact - exact * 1e-12);
  rank = std::clamp(rank, 1.0, n);
  return sorted[static_cast<std::size_t>(rank) - 1];
}

LatencySummary summarize(std::vector<double> samples) {
  LatencySummary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.p50 = nearest_rank(samples, 50);
  s.p99 = nearest_rank(samples, 99);
  s.p999 = nearest_rank(samples, 99.9);
  // Two passes (mean, then squared deviations) keep the variance accurate where the
  // one-pass sum-of-squares formula cancels catastrophically (large mean, small spread).
  double sum = 0;
  for (double x : samples)
    sum += x;
  s.mean = sum / static_cast<double>(s.count);
  if (s.count > 1) {
    double squares = 0;
    for (double x : samples)
      squares += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(squares / static_cast<double>(s.count - 1));
  }
  return s;
}

double gbps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) * 8.0 / seconds / 1e9 : 0;
}

double gbytes_per_s(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

double mpps(uint64_t messages, double seconds) {
  return seconds > 0 ? static_cast<double>(messages) / seconds / 1e6 : 0;
}

Bandwidth bandwidth(uint64_t bytes, uint64_t messages, double seconds) {
  return Bandwidth{gbps(bytes, seconds), gbytes_per_s(bytes, seconds), mpps(messages, seconds)};
}

void write_latency_fields(json::Writer& out, const LatencySummary& s) {
  out.field("count", static_cast<uint64_t>(s.count));
  out.field("min_us", s.min);
  out.field("p50_us", s.p50);
  out.field("p99_us", s.p99);
  out.field("p999_us", s.p999);
  out.field("max_us", s.max);
  out.field("mean_us", s.mean);
  out.field("stdev_us", s.stdev);
}

void write_bandwidth_fields(json::Writer& out, const Bandwidth& bw) {
  out.field("avg_gbps", bw.gbps);
  out.field("avg_gbytes_per_s", bw.gbytes_per_s);
  out.field("msg_rate_mpps", bw.mpps);
}

} // namespace fabric::probes
