// --pairs: the plan (nodes, rounds, colours) and the verdict from measured pairs.
#include <gtest/gtest.h>

#include <set>

#include "nccltest/pairs.h"

namespace fabric::nccltest {
namespace {

std::vector<RankInfo> ranks_on(const std::vector<std::string>& hosts) {
  std::vector<RankInfo> out;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    RankInfo r;
    r.rank = static_cast<int>(i);
    r.host = hosts[i];
    out.push_back(r);
  }
  return out;
}

TEST(PairsPlan, NodesAreHostsAndEveryPairMeetsOnce) {
  PairsPlan plan = plan_pairs(ranks_on({"a", "a", "b", "b", "c", "c", "d", "d"}), PairsBy::kHost);
  EXPECT_EQ(plan.nodes, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(plan.node_ranks[2], (std::vector<int>{4, 5}));
  ASSERT_EQ(plan.rounds.size(), 3u);
  std::set<std::pair<std::size_t, std::size_t>> seen;
  for (std::size_t round = 0; round < plan.rounds.size(); ++round) {
    std::set<int> colours;
    for (int rank = 0; rank < 8; ++rank) {
      int colour = pair_color(plan, round, rank);
      ASSERT_GE(colour, 0); // 4 nodes: nobody sits out
      colours.insert(colour);
      // Both ranks of a node are in the same pair.
      EXPECT_EQ(colour, pair_color(plan, round, rank ^ 1));
    }
    EXPECT_EQ(colours.size(), 2u);
    for (const auto& p : plan.rounds[round])
      EXPECT_TRUE(seen.insert(p).second);
  }
  EXPECT_EQ(seen.size(), 6u);
}

TEST(PairsPlan, ByRankAndOddCounts) {
  PairsPlan plan = plan_pairs(ranks_on({"h", "h", "h"}), PairsBy::kRank);
  EXPECT_EQ(plan.nodes, (std::vector<std::string>{"rank0@h", "rank1@h", "rank2@h"}));
  ASSERT_EQ(plan.rounds.size(), 3u);
  for (std::size_t round = 0; round < 3; ++round) {
    int sitting_out = 0;
    for (int rank = 0; rank < 3; ++rank)
      sitting_out += pair_color(plan, round, rank) < 0;
    EXPECT_EQ(sitting_out, 1);
  }
}

PairsReport assemble(const PairsPlan& plan, std::vector<double> busbw_by_pair) {
  std::vector<PairMeasurement> measured;
  std::size_t i = 0;
  for (std::size_t round = 0; round < plan.rounds.size(); ++round) {
    for (const auto& [a, b] : plan.rounds[round]) {
      measured.push_back({round, a, b, 100.0, busbw_by_pair[i++]});
    }
  }
  PairsReport header;
  header.collective = "all_reduce";
  header.bytes = 1 << 20;
  header.op = "sum";
  header.iters = 20;
  auto report = assemble_pairs(plan, measured, header);
  EXPECT_TRUE(report.ok());
  return *report;
}

TEST(PairsReport, ASlowPairIsNamed) {
  PairsPlan plan = plan_pairs(ranks_on({"n0", "n1", "n2", "n3"}), PairsBy::kHost);
  std::vector<double> bw;
  for (const auto& round : plan.rounds) {
    for (const auto& [a, b] : round)
      bw.push_back(a == 1 && b == 2 ? 2.0 : 10.0 + 0.1 * a);
  }
  PairsReport r = assemble(plan, bw);
  ASSERT_EQ(r.mesh.outliers.cells.size(), 1u);
  EXPECT_EQ(r.mesh.outliers.cells[0].source, 1u);
  EXPECT_EQ(r.mesh.outliers.cells[0].destination, 2u);
  EXPECT_TRUE(r.mesh.outliers.hosts.empty());
  EXPECT_EQ(r.verdict.rfind("slow pair n1 - n2: ", 0), 0u) << r.verdict;
  std::string text = render_pairs_text(r);
  EXPECT_NE(text.find("# Slow pair: n1 - n2: 2 is 80% below"), std::string::npos) << text;
  EXPECT_NE(text.find("# Verdict: slow pair n1 - n2"), std::string::npos);
}

TEST(PairsReport, ASlowNodeIsNamedAndRankedFirst) {
  PairsPlan plan = plan_pairs(ranks_on({"n0", "n1", "n2", "n3", "n4", "n5"}), PairsBy::kHost);
  std::vector<double> bw;
  for (const auto& round : plan.rounds) {
    for (const auto& [a, b] : round)
      bw.push_back(a == 3 || b == 3 ? 3.0 : 12.0);
  }
  PairsReport r = assemble(plan, bw);
  ASSERT_FALSE(r.ranking.empty());
  EXPECT_EQ(r.nodes[r.ranking.front().node], "n3");
  EXPECT_TRUE(r.ranking.front().flagged);
  EXPECT_DOUBLE_EQ(r.ranking.front().median_busbw, 3.0);
  EXPECT_EQ(r.verdict.rfind("slow node n3: ", 0), 0u) << r.verdict;
}

// Ranks sharing a node's cores spread widely (seen: 0.23 to 0.43 GB/s); a pair that
// moved almost nothing must still be named, however wide the others' spread.
TEST(PairsReport, ASlowPairStandsOutOfWidelySpreadPairs) {
  PairsPlan plan = plan_pairs(ranks_on({"n0", "n1", "n2", "n3"}), PairsBy::kHost);
  std::vector<double> bw;
  const double others[] = {0.34, 0.43, 0.31, 0.25, 0.23};
  std::size_t k = 0;
  for (const auto& round : plan.rounds) {
    for (const auto& [a, b] : round)
      bw.push_back(a == 1 && b == 2 ? 0.00195 : others[k++]);
  }
  PairsReport r = assemble(plan, bw);
  ASSERT_EQ(r.mesh.outliers.cells.size(), 1u) << r.verdict;
  EXPECT_EQ(r.mesh.outliers.cells[0].source, 1u);
  EXPECT_EQ(r.mesh.outliers.cells[0].destination, 2u);
  EXPECT_EQ(r.verdict.rfind("slow pair n1 - n2: ", 0), 0u) << r.verdict;
}

TEST(PairsReport, UniformPairsHaveNoVerdictAgainstAnyone) {
  PairsPlan plan = plan_pairs(ranks_on({"n0", "n1", "n2", "n3"}), PairsBy::kHost);
  PairsReport r = assemble(plan, {10.0, 10.2, 9.9, 10.1, 10.0, 9.8});
  EXPECT_TRUE(r.mesh.outliers.cells.empty());
  EXPECT_TRUE(r.mesh.outliers.hosts.empty());
  EXPECT_EQ(r.verdict, "no slow node or pair: every pair is within the noise of the others");
}

} // namespace
} // namespace fabric::nccltest
