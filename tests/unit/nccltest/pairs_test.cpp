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
  PairsPlan plan = *plan_pairs(ranks_on({"a", "a", "b", "b", "c", "c", "d", "d"}), PairsBy::kHost);
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
  PairsPlan plan = *plan_pairs(ranks_on({"h", "h", "h"}), PairsBy::kRank);
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
  PairsPlan plan = *plan_pairs(ranks_on({"n0", "n1", "n2", "n3"}), PairsBy::kHost);
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
  PairsPlan plan = *plan_pairs(ranks_on({"n0", "n1", "n2", "n3", "n4", "n5"}), PairsBy::kHost);
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
  PairsPlan plan = *plan_pairs(ranks_on({"n0", "n1", "n2", "n3"}), PairsBy::kHost);
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
  PairsPlan plan = *plan_pairs(ranks_on({"n0", "n1", "n2", "n3"}), PairsBy::kHost);
  PairsReport r = assemble(plan, {10.0, 10.2, 9.9, 10.1, 10.0, 9.8});
  EXPECT_TRUE(r.mesh.outliers.cells.empty());
  EXPECT_TRUE(r.mesh.outliers.hosts.empty());
  EXPECT_EQ(r.verdict, "no slow node or pair: every pair is within the noise of the others");
}

// At scale: a ring is two rounds whatever the node count, each pair stored lower first;
// by rank each of its pairs still runs alone.
TEST(PairsPlan, ARingIsTwoRoundsAndByRankStillOnePairAtATime) {
  probes::PatternSpec ring;
  ring.kind = probes::PatternKind::kRing;
  std::vector<std::string> hosts;
  for (int i = 0; i < 64; ++i)
    hosts.push_back("n" + std::to_string(i / 2)); // 32 nodes, two ranks each
  auto plan = plan_pairs(ranks_on(hosts), PairsBy::kHost, ring);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->rounds.size(), 2u);
  std::set<std::size_t> met;
  for (const auto& round : plan->rounds) {
    for (const auto& [a, b] : round) {
      EXPECT_LT(a, b);
      met.insert(a);
      met.insert(b);
    }
  }
  EXPECT_EQ(met.size(), 32u); // every node under load
  EXPECT_EQ(probes::describe_plan(plan->pattern).rfind("ring: 2 rounds", 0), 0u)
      << probes::describe_plan(plan->pattern);

  auto by_rank = plan_pairs(ranks_on({"h", "h", "h", "h"}), PairsBy::kRank, ring);
  ASSERT_TRUE(by_rank.ok());
  EXPECT_EQ(by_rank->rounds.size(), 4u); // 2 ring rounds of 2 pairs, one pair at a time
  for (const auto& round : by_rank->rounds)
    EXPECT_EQ(round.size(), 1u);
}

TEST(PairsPlan, PatternsThatFollowLeavesAreRefused) {
  probes::PatternSpec leaf;
  leaf.kind = probes::PatternKind::kLeafLocal;
  auto plan = plan_pairs(ranks_on({"a", "b", "c", "d"}), PairsBy::kHost, leaf);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message().find("--pairs-pattern"), std::string::npos);
  EXPECT_NE(plan.error().message().find("leaf"), std::string::npos) << plan.error().message();
}

// After a ring, narrowing's verdict is the report's: the slow node is flagged and ranked,
// and the follow-up pairs are listed after the pattern's.
TEST(PairsReport, ARingsVerdictComesFromNarrowing) {
  probes::PatternSpec ring;
  ring.kind = probes::PatternKind::kRing;
  PairsPlan plan = *plan_pairs(ranks_on({"n0", "n1", "n2", "n3"}), PairsBy::kHost, ring);
  std::vector<double> bw;
  for (const auto& round : plan.rounds)
    for (const auto& [a, b] : round)
      bw.push_back(a == 2 || b == 2 ? 1.0 : 10.0);
  PairsReport r = assemble(plan, bw);
  r.all_pairs = false;
  r.pattern = probes::describe_plan(plan.pattern);
  probes::Narrowing n;
  n.baseline = 10;
  n.limit = 2;
  n.verdict.kind = probes::FaultKind::kNode;
  n.verdict.hosts = {2};
  n.verdict.low_results = 3;
  apply_narrowing(r, n, {{2, 0, 2, 100.0, 1.5}});
  ASSERT_EQ(r.mesh.outliers.hosts.size(), 1u);
  EXPECT_EQ(r.mesh.outliers.hosts[0].host, 2u);
  EXPECT_TRUE(r.mesh.outliers.cells.empty());
  EXPECT_EQ(r.verdict, "node n2: slow with every partner (3 low results)");
  EXPECT_EQ(r.mesh.matrix[0][2], 1.5); // the follow-up fills a cell the ring left empty
  const std::string text = render_pairs_text(r);
  EXPECT_NE(text.find("over 4 nodes, 20 iterations each, ring: 2 rounds"), std::string::npos)
      << text;
  EXPECT_NE(text.find("# Follow-up rounds, narrowing down:\n#      3  n0"), std::string::npos)
      << text;
  EXPECT_NE(text.find("SLOW"), std::string::npos);
  EXPECT_NE(text.find("# Verdict: node n2: slow with every partner"), std::string::npos);

  n.verdict.kind = probes::FaultKind::kPath;
  n.verdict.hosts = {3, 2};
  apply_narrowing(r, n, {});
  ASSERT_EQ(r.mesh.outliers.cells.size(), 1u);
  EXPECT_EQ(r.mesh.outliers.cells[0].source, 2u);
  EXPECT_EQ(r.mesh.outliers.cells[0].destination, 3u);
  EXPECT_DOUBLE_EQ(r.mesh.outliers.cells[0].value, 1.0);
  EXPECT_TRUE(r.mesh.outliers.hosts.empty());
  EXPECT_EQ(r.verdict.rfind("path n3 - n2: slow between these two only", 0), 0u) << r.verdict;
}

} // namespace
} // namespace fabric::nccltest
