// -I 1 and -K: nccl-tests 2.19's per-iteration summary (computeIterStats, percentileIndex)
// on known series, the slowest process per iteration through a Group, the options' checks
// with nccl-tests' messages, and the JSON objects under nccl-tests' keys.
#include <gtest/gtest.h>

#include <cstring>

#include "common/json.h"
#include "nccltest/options.h"
#include "nccltest/outputs.h"
#include "nccltest/per_iteration.h"

namespace fabric::nccltest {
namespace {

TEST(PerIterationStats, NinetyNinthPercentileIsTheNearestRank) {
  // ceil(n * 99 / 100) - 1: below 100 samples that is the largest.
  EXPECT_EQ(percentile_index(1, 99), 0u);
  EXPECT_EQ(percentile_index(20, 99), 19u);
  EXPECT_EQ(percentile_index(99, 99), 98u);
  EXPECT_EQ(percentile_index(100, 99), 98u);
  EXPECT_EQ(percentile_index(1000, 99), 989u);
  EXPECT_EQ(percentile_index(20, 95), 18u);
  std::vector<double> times;
  for (int i = 20; i >= 1; --i)
    times.push_back(i);
  const IterationStats s = iteration_stats(times);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 20);
  EXPECT_DOUBLE_EQ(s.p99, 20); // fewer than 100 samples: the maximum
  EXPECT_DOUBLE_EQ(s.p95, 19);
  EXPECT_DOUBLE_EQ(s.p50, 11); // sorted[n / 2], as nccl-tests
  EXPECT_DOUBLE_EQ(s.avg, 10.5);
}

TEST(PerIterationStats, CoefficientOfVariationIsPopulationStdevOverMean) {
  const std::vector<double> constant(7, 3.25);
  IterationStats s = iteration_stats(constant);
  EXPECT_DOUBLE_EQ(s.stdev, 0);
  EXPECT_DOUBLE_EQ(s.cv_pct, 0);
  // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, population stdev 2 (the sample stdev would be 2.14).
  s = iteration_stats(std::vector<double>{9, 4, 2, 4, 5, 4, 7, 5});
  EXPECT_DOUBLE_EQ(s.avg, 5);
  EXPECT_DOUBLE_EQ(s.stdev, 2);
  EXPECT_DOUBLE_EQ(s.cv_pct, 40);
  s = iteration_stats(std::vector<double>{0, 0});
  EXPECT_DOUBLE_EQ(s.cv_pct, 0); // no division by a zero mean
  s = iteration_stats(std::vector<double>{});
  EXPECT_DOUBLE_EQ(s.max, 0);
}

// Processes as a Group: each allgather hands back every process's next slice of its own
// series, and records how many bytes the exchange carried in all.
class SeriesGroup final : public Group {
public:
  explicit SeriesGroup(std::vector<std::vector<double>> series, int rank = 0)
      : series_(std::move(series)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(series_.size()); }
  Result<std::vector<std::string>> allgather(std::string_view mine) override {
    const std::size_t count = mine.size() / sizeof(double);
    std::vector<std::string> all;
    std::size_t bytes = 0;
    for (const std::vector<double>& s : series_) {
      std::string part(count * sizeof(double), '\0');
      std::memcpy(part.data(), s.data() + cursor_, part.size());
      bytes += part.size();
      all.push_back(std::move(part));
    }
    cursor_ += count;
    ++exchanges;
    largest_exchange = std::max(largest_exchange, bytes);
    return all;
  }
  Result<std::string> broadcast(std::string_view mine) override { return std::string(mine); }
  [[noreturn]] void abort(int, const std::string&) override { std::abort(); }
  int exchanges = 0;
  std::size_t largest_exchange = 0;

private:
  std::vector<std::vector<double>> series_;
  std::size_t cursor_ = 0;
  int rank_;
};

TEST(PerIterationStats, EachIterationIsTheSlowestProcessAndTheSkippedOnesAreLeftOut) {
  // Seconds per operation; process 1 is slow in iteration 0 (a warm-up outlier), process 2
  // in iteration 3.
  const std::vector<std::vector<double>> series = {
      {1e-6, 2e-6, 2e-6, 2e-6}, {90e-6, 1e-6, 3e-6, 2e-6}, {1e-6, 1e-6, 1e-6, 5e-6}};
  SeriesGroup group(series);
  auto reduced = reduce_per_iteration(group, series[0], 1);
  ASSERT_TRUE(reduced.ok()) << reduced.error().message();
  EXPECT_EQ(reduced->skipped, 1);
  ASSERT_EQ(reduced->times_us.size(), 4u);
  EXPECT_NEAR(reduced->times_us[0], 90, 1e-9);
  EXPECT_NEAR(reduced->times_us[1], 2, 1e-9);
  EXPECT_NEAR(reduced->times_us[2], 3, 1e-9);
  EXPECT_NEAR(reduced->times_us[3], 5, 1e-9);
  // The summary starts after the skipped outlier.
  EXPECT_NEAR(reduced->stats.min, 2, 1e-9);
  EXPECT_NEAR(reduced->stats.max, 5, 1e-9);
  EXPECT_NEAR(reduced->stats.p99, 5, 1e-9);
  // Rank 0 keeps each process's own series for the JSON report.
  ASSERT_EQ(reduced->per_process_us.size(), 3u);
  EXPECT_NEAR(reduced->per_process_us[1][0], 90, 1e-9);
  // Without -K the outlier is the maximum.
  SeriesGroup again(series);
  auto unskipped = reduce_per_iteration(again, series[0], 0);
  ASSERT_TRUE(unskipped.ok());
  EXPECT_NEAR(unskipped->stats.max, 90, 1e-9);
  // Another rank reduces the same numbers but keeps no per-process copy.
  SeriesGroup other(series, 2);
  auto on_rank_2 = reduce_per_iteration(other, series[2], 1);
  ASSERT_TRUE(on_rank_2.ok());
  EXPECT_EQ(on_rank_2->times_us, reduced->times_us);
  EXPECT_TRUE(on_rank_2->per_process_us.empty());
}

TEST(PerIterationStats, ManyProcessesAndIterationsAreExchangedInBoundedSlices) {
  // 64 processes x 20000 iterations: 10 MB if sent at once, and more than
  // kMaxPerProcessSamples, so rank 0 keeps only the slowest per iteration.
  const std::size_t iterations = 20000;
  std::vector<std::vector<double>> series(64, std::vector<double>(iterations, 1e-6));
  series[63][iterations - 1] = 7e-6;
  SeriesGroup group(series);
  auto reduced = reduce_per_iteration(group, series[0], 0);
  ASSERT_TRUE(reduced.ok()) << reduced.error().message();
  EXPECT_LE(group.largest_exchange, std::size_t{256} << 10);
  EXPECT_GT(group.exchanges, 1);
  EXPECT_NEAR(reduced->times_us.back(), 7, 1e-9);
  EXPECT_NEAR(reduced->stats.max, 7, 1e-9);
  EXPECT_TRUE(reduced->per_process_us.empty());
}

Result<Options> parse(std::vector<std::string> argv) {
  CLI::App app;
  RawOptions raw;
  add_options(app, raw);
  std::reverse(argv.begin(), argv.end());
  app.parse(argv);
  return validate_options(raw, {});
}

TEST(PerIterationOptions, OnAndSkipAsGiven) {
  auto o = parse({"-I", "1", "-K", "2", "-n", "10"});
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_TRUE(o->per_iteration);
  EXPECT_EQ(o->per_iteration_skip, 2);
  EXPECT_TRUE(o->notes.empty());
  auto off = parse({});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->per_iteration);
}

// nccl-tests' checks, in its order, each switching the option off with its own message.
TEST(PerIterationOptions, WhatNcclTestsDisablesIsSwitchedOffWithItsMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string note;
    bool on;
    int skip;
  };
  const Case cases[] = {
      {{"-I", "2"}, "per-iteration timing (-I) only supports 0=off or 1=on. Disabling.", false, 0},
      {{"-I", "-1"}, "per-iteration timing (-I) only supports 0=off or 1=on. Disabling.", false, 0},
      {{"-I", "1", "-G", "2"},
       "per-iteration timing (-I) is incompatible with CUDA graph mode (-G). Disabling.",
       false,
       0},
      {{"-I", "1", "-K", "20"},
       "per-iteration skip (-K) must be between 0 and 19. Disabling.",
       true,
       0},
      {{"-I", "1", "-K", "-3", "-n", "5"},
       "per-iteration skip (-K) must be between 0 and 4. Disabling.",
       true,
       0},
      {{"-K", "2"},
       "per-iteration skip (-K) requires per-iteration timing (-I 1). Disabling.",
       false,
       0},
  };
  for (const Case& c : cases) {
    auto o = parse(c.args);
    ASSERT_TRUE(o.ok()) << o.error().message();
    EXPECT_EQ(o->notes, std::vector<std::string>{c.note}) << c.args[1];
    EXPECT_EQ(o->per_iteration, c.on) << c.args[1];
    EXPECT_EQ(o->per_iteration_skip, c.skip) << c.args[1];
  }
  // -I 2 -K 1: -I is switched off first, then -K for want of it, as nccl-tests does.
  auto both = parse({"-I", "2", "-K", "1"});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->notes.size(), 2u);
  EXPECT_EQ(both->notes.back(),
            "per-iteration skip (-K) requires per-iteration timing (-I 1). Disabling.");
}

TEST(PerIterationOptions, MoreIterationsThanItKeepsAreRefusedNamingTheBound) {
  auto o = parse({"-I", "1", "-n", "100001"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().operation(), "-I/--per_iter_timing");
  EXPECT_NE(o.error().message().find("at most 100000 iterations"), std::string::npos)
      << o.error().message();
  EXPECT_TRUE(parse({"-I", "1", "-n", "100000"}).ok());
  EXPECT_TRUE(parse({"-n", "100001"}).ok()); // without -I nothing is kept per iteration
}

TEST(PerIterationJson, ObjectsFollowEachPlacementUnderNcclTestsKeys) {
  RunRecord r;
  r.header.per_iteration = true;
  r.header.per_iteration_skip = 1;
  SizeRow row;
  row.bytes = 8;
  row.count = 2;
  row.op = "sum";
  PerIteration it;
  it.skipped = 1;
  it.times_us = {50, 2, 3};
  it.stats = iteration_stats(std::vector<double>{2, 3});
  it.per_process_us = {{50, 2, 1}, {4, 1, 3}};
  row.out_of_place_iterations = it;
  it.per_process_us.clear();
  row.in_place_iterations = it;
  r.rows = {row};
  auto doc = json::parse(render_json_report(r), "report");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_STREQ((*doc)["config"]["per_iter_timing"].GetString(), "true");
  EXPECT_EQ((*doc)["config"]["per_iter_skip"].GetInt(), 1);
  const auto& result = (*doc)["results"][0];
  std::vector<std::string> keys;
  for (auto& m : result.GetObject())
    keys.emplace_back(m.name.GetString());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"size", "count", "type", "redop", "root", "out_of_place",
                                      "out_of_place_per_iter", "in_place", "in_place_per_iter",
                                      "actual_iterations", "experiment_name"}));
  const auto& oop = result["out_of_place_per_iter"];
  keys.clear();
  for (auto& m : oop.GetObject())
    keys.emplace_back(m.name.GetString());
  EXPECT_EQ(keys, (std::vector<std::string>{"skipped_iterations", "min_us", "max_us", "avg_us",
                                            "p50_us", "p95_us", "p99_us", "stdev_us", "cv_pct",
                                            "times_us", "per_process_max_times_us"}));
  EXPECT_EQ(oop["skipped_iterations"].GetInt(), 1);
  EXPECT_DOUBLE_EQ(oop["max_us"].GetDouble(), 3);
  EXPECT_DOUBLE_EQ(oop["cv_pct"].GetDouble(), 20);
  EXPECT_EQ(oop["times_us"].Size(), 3u);
  EXPECT_DOUBLE_EQ(oop["times_us"][0].GetDouble(), 50);
  EXPECT_DOUBLE_EQ(oop["per_process_max_times_us"][1][0].GetDouble(), 4);
  EXPECT_FALSE(result["in_place_per_iter"].HasMember("per_process_max_times_us"));
  // Without -I, nccl-tests' config says so and no row has the objects.
  r.header.per_iteration = false;
  r.rows[0].out_of_place_iterations.reset();
  r.rows[0].in_place_iterations.reset();
  doc = json::parse(render_json_report(r), "report");
  ASSERT_TRUE(doc.ok());
  EXPECT_STREQ((*doc)["config"]["per_iter_timing"].GetString(), "false");
  EXPECT_FALSE((*doc)["results"][0].HasMember("out_of_place_per_iter"));
}

} // namespace
} // namespace fabric::nccltest
