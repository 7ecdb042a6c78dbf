// Outlier detection on all-pairs matrices: one slow link, a slow host, noise that must
// pass, missing results, latency (high is bad), and the floor for a uniform matrix.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "libs/pair_schedules/outliers.h"

namespace fabric::probes {
namespace {

MeshMatrix uniform(std::size_t n, double value) {
  MeshMatrix m(n, std::vector<std::optional<double>>(n, value));
  for (std::size_t i = 0; i < n; ++i)
    m[i][i] = std::nullopt;
  return m;
}

// value * (1 +- spread), deterministic: mt19937's output is fixed by the standard (the
// library's distributions are not, so none is used).
MeshMatrix noisy(std::size_t n, double value, double spread, unsigned seed) {
  std::mt19937 gen(seed);
  MeshMatrix m = uniform(n, value);
  for (auto& row : m) {
    for (auto& cell : row) {
      if (!cell) continue;
      const double u = static_cast<double>(gen()) / static_cast<double>(std::mt19937::max());
      cell = value * (1 + spread * (2 * u - 1));
    }
  }
  return m;
}

TEST(Outliers, RobustStatsMedianAndScaledMad) {
  RobustStats s = robust_stats({100, 1, 3, 2, 4});
  EXPECT_EQ(s.count, 5u);
  EXPECT_EQ(s.median, 3);
  EXPECT_NEAR(s.mad, 1.4826, 1e-12); // deviations 0 1 1 2 97
  EXPECT_EQ(robust_stats({1, 2, 3, 4}).median, 2.5);
  EXPECT_EQ(robust_stats({}).count, 0u);
}

TEST(Outliers, OneSlowLinkInAUniformMatrix) {
  MeshMatrix m = uniform(8, 100);
  m[2][5] = 40;
  auto r = find_outliers(m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->hosts.empty());
  ASSERT_EQ(r->cells.size(), 1u);
  const FlaggedCell& cell = r->cells[0];
  EXPECT_EQ(cell.source, 2u);
  EXPECT_EQ(cell.destination, 5u);
  EXPECT_EQ(cell.value, 40);
  EXPECT_EQ(cell.row_median, 100);
  EXPECT_EQ(cell.column_median, 100);
  EXPECT_NE(cell.reason.find("40 is 60% below its row's median 100"), std::string::npos)
      << cell.reason;
  EXPECT_NE(cell.reason.find("below its column's median 100"), std::string::npos);
}

TEST(Outliers, SlowHostIsFlaggedAsAHostNotCellByCell) {
  MeshMatrix m = noisy(8, 100, 0.02, 7);
  for (std::size_t k = 0; k < 8; ++k) {
    if (k == 3) continue;
    m[3][k] = 50 + static_cast<double>(k) * 0.1;
    m[k][3] = 51 + static_cast<double>(k) * 0.1;
  }
  auto r = find_outliers(m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->cells.empty()) << r->cells.size() << " cells, first: "
                                << (r->cells.empty() ? "" : r->cells[0].reason);
  ASSERT_EQ(r->hosts.size(), 1u);
  const FlaggedHost& host = r->hosts[0];
  EXPECT_EQ(host.host, 3u);
  EXPECT_TRUE(host.as_source);
  EXPECT_TRUE(host.as_destination);
  ASSERT_TRUE(host.source_median.has_value());
  EXPECT_NEAR(*host.source_median, 50.4, 0.01);
  EXPECT_NEAR(host.hosts_source_median, 100, 2);
  EXPECT_NE(host.reason.find("as a source its median 50.4 is"), std::string::npos) << host.reason;
  EXPECT_NE(host.reason.find("as a destination"), std::string::npos) << host.reason;
}

TEST(Outliers, HostSlowOnlyAsDestination) {
  MeshMatrix m = uniform(6, 100);
  for (std::size_t k = 0; k < 6; ++k) {
    if (k != 4) m[k][4] = 60;
  }
  auto r = find_outliers(m);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->hosts.size(), 1u);
  EXPECT_EQ(r->hosts[0].host, 4u);
  EXPECT_FALSE(r->hosts[0].as_source);
  EXPECT_TRUE(r->hosts[0].as_destination);
  EXPECT_TRUE(r->cells.empty());
}

TEST(Outliers, NoiseIsNotFlaggedButASlowLinkInItIs) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    MeshMatrix m = noisy(12, 100, 0.04, seed);
    auto clean = find_outliers(m);
    ASSERT_TRUE(clean.ok());
    EXPECT_TRUE(clean->cells.empty()) << "seed " << seed << ": " << clean->cells[0].reason;
    EXPECT_TRUE(clean->hosts.empty()) << "seed " << seed << ": " << clean->hosts[0].reason;

    m[7][1] = 70;
    auto slow = find_outliers(m);
    ASSERT_TRUE(slow.ok());
    ASSERT_EQ(slow->cells.size(), 1u) << "seed " << seed;
    EXPECT_EQ(slow->cells[0].source, 7u);
    EXPECT_EQ(slow->cells[0].destination, 1u);
  }
}

TEST(Outliers, UniformMatrixUsesTheRelativeFloor) {
  MeshMatrix m = uniform(6, 100);
  m[0][1] = 92; // 8% off: within the 10% floor although the MAD is 0
  m[2][3] = 88; // 12% off
  auto r = find_outliers(m);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->cells.size(), 1u);
  EXPECT_EQ(r->cells[0].source, 2u);
  OutlierOptions strict;
  strict.min_relative = 0.05;
  auto s = find_outliers(m, strict);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->cells.size(), 2u);
}

TEST(Outliers, MissingValuesAreSkipped) {
  MeshMatrix m = uniform(7, 100);
  m[0][1] = std::nullopt;
  m[4][2] = std::nullopt;
  m[3][3] = 1;                          // a diagonal value never counts
  for (std::size_t k = 0; k < 7; ++k) { // host 6: every pair failed
    m[6][k] = std::nullopt;
    m[k][6] = std::nullopt;
  }
  m[5][0] = 30;
  auto r = find_outliers(m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->hosts.empty());
  ASSERT_EQ(r->cells.size(), 1u);
  EXPECT_EQ(r->cells[0].source, 5u);
  EXPECT_EQ(r->cells[0].destination, 0u);
}

TEST(Outliers, LatencyIsBadWhenHigh) {
  MeshMatrix m = uniform(6, 5.0);
  m[1][2] = 9.0;
  m[3][4] = 2.0; // faster than the rest: not a problem
  OutlierOptions latency;
  latency.better = Better::kLower;
  auto r = find_outliers(m, latency);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->cells.size(), 1u);
  EXPECT_EQ(r->cells[0].source, 1u);
  EXPECT_NE(r->cells[0].reason.find("80% above its row's median 5"), std::string::npos)
      << r->cells[0].reason;
}

TEST(Outliers, BadInputIsRefused) {
  MeshMatrix ragged = uniform(3, 1);
  ragged[1].pop_back();
  auto r = find_outliers(ragged);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("row 1 has 2 cells"), std::string::npos);
  MeshMatrix nan = uniform(3, 1);
  nan[0][2] = std::nan("");
  auto n = find_outliers(nan);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message().find("[0][2]"), std::string::npos);
  OutlierOptions zero;
  zero.threshold = 0;
  EXPECT_FALSE(find_outliers(uniform(3, 1), zero).ok());
  auto empty = find_outliers({});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->cells.empty());
}

} // namespace
} // namespace fabric::probes
