// Latency summaries (nearest-rank percentiles, sample stdev) and bandwidth arithmetic.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "common/json.h"
#include "probes/stats.h"

namespace fabric::probes {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 1.0);
  // Order must not matter: summarize sorts.
  std::shuffle(v.begin(), v.end(), std::mt19937(42));
  return v;
}

TEST(Stats, OneToHundred) {
  LatencySummary s = summarize(one_to(100));
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 100);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p99, 99);
  EXPECT_EQ(s.p999, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  // Sample variance of 1..n is n(n+1)/12.
  EXPECT_NEAR(s.stdev, std::sqrt(100.0 * 101.0 / 12.0), 1e-9);
}

TEST(Stats, WholeRanksDoNotRoundUp) {
  // 99.9% of 1000 is rank 999 exactly, though 99.9 / 100 * 1000 is 999.0000000000001.
  LatencySummary s = summarize(one_to(1000));
  EXPECT_EQ(s.p999, 999);
  EXPECT_EQ(s.p99, 990);
  EXPECT_EQ(s.p50, 500);
  EXPECT_EQ(s.max, 1000);
}

TEST(Stats, NearestRankPicksMeasuredSamples) {
  EXPECT_EQ(summarize({4, 1, 3, 2}).p50, 2); // lower middle, not 2.5
  EXPECT_EQ(summarize({10, 20, 30}).p50, 20);
  std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(nearest_rank(sorted, 0.1), 1);
  EXPECT_EQ(nearest_rank(sorted, 10), 1);
  EXPECT_EQ(nearest_rank(sorted, 10.5), 2);
  EXPECT_EQ(nearest_rank(sorted, 100), 10);
  EXPECT_EQ(nearest_rank({}, 50), 0);
}

TEST(Stats, EmptyAndSingleSample) {
  LatencySummary none = summarize({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_EQ(none.max, 0);
  LatencySummary one = summarize({7.5});
  EXPECT_EQ(one.count, 1u);
  EXPECT_EQ(one.min, 7.5);
  EXPECT_EQ(one.p999, 7.5);
  EXPECT_EQ(one.stdev, 0);
}

TEST(Stats, StdevStaysAccurateFarFromZero) {
  LatencySummary s = summarize({1e9, 1e9 + 1, 1e9 + 2});
  EXPECT_NEAR(s.stdev, 1.0, 1e-6);
  EXPECT_NEAR(s.mean, 1e9 + 1, 1e-6);
}

TEST(Stats, BandwidthUnitsAreDecimal) {
  Bandwidth bw = bandwidth(1250000000, 1000000, 0.5);
  EXPECT_DOUBLE_EQ(bw.gbps, 20.0);
  EXPECT_DOUBLE_EQ(bw.gbytes_per_s, 2.5);
  EXPECT_DOUBLE_EQ(bw.mpps, 2.0);
  EXPECT_DOUBLE_EQ(gbps(125000000, 1.0), 1.0);
  EXPECT_EQ(gbps(1000, 0), 0);
  EXPECT_EQ(mpps(1000, -1), 0);
}

TEST(Stats, JsonFieldsCarryTheirUnits) {
  json::Writer w(false);
  w.begin_object();
  write_latency_fields(w, summarize(one_to(100)));
  write_bandwidth_fields(w, bandwidth(1250000000, 1000, 1.0));
  w.end_object();
  auto doc = json::parse(w.str(), "summary");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ((*doc)["count"].GetUint64(), 100u);
  EXPECT_EQ((*doc)["p50_us"].GetDouble(), 50.0);
  EXPECT_EQ((*doc)["p999_us"].GetDouble(), 100.0);
  EXPECT_EQ((*doc)["avg_gbps"].GetDouble(), 10.0);
  EXPECT_EQ((*doc)["avg_gbytes_per_s"].GetDouble(), 1.25);
  EXPECT_EQ((*doc)["msg_rate_mpps"].GetDouble(), 0.001);
}

} // namespace
} // namespace fabric::probes
