// The patterns' rounds: each a matching, as many as each pattern states, covering what it
// states; random matchings reproducible from their seed.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "libs/pair_schedules/mesh_patterns.h"

namespace fabric::probes {
namespace {

std::vector<std::string> leaves(std::size_t n, std::size_t per_leaf) {
  std::vector<std::string> out;
  for (std::size_t h = 0; h < n; ++h)
    out.push_back("leaf" + std::to_string(h / per_leaf));
  return out;
}

// Every round a matching; returns the unordered pairs met, with how often.
std::map<MeshPair, int> check_matchings(const PatternPlan& plan, std::size_t n) {
  std::map<MeshPair, int> met;
  for (std::size_t r = 0; r < plan.rounds.size(); ++r) {
    std::set<std::size_t> busy;
    for (auto [a, b] : plan.rounds[r]) {
      EXPECT_LT(a, n);
      EXPECT_LT(b, n);
      EXPECT_NE(a, b);
      EXPECT_TRUE(busy.insert(a).second) << "host " << a << " twice in round " << r;
      EXPECT_TRUE(busy.insert(b).second) << "host " << b << " twice in round " << r;
      ++met[std::minmax(a, b)];
    }
  }
  return met;
}

PatternPlan plan(const std::string& text, const std::vector<std::string>& l, bool ordered) {
  auto spec = parse_pattern(text);
  EXPECT_TRUE(spec.ok()) << spec.error().message();
  auto p = plan_pattern(*spec, l, ordered);
  EXPECT_TRUE(p.ok()) << p.error().message();
  return p.ok() ? *p : PatternPlan{};
}

TEST(MeshPatterns, RingTakesTwoRoundsOrThreeAndLoadsEveryHostWithTwoPartners) {
  for (std::size_t n : {3, 4, 7, 8, 65, 10000}) {
    SCOPED_TRACE(n);
    auto p = plan("ring", std::vector<std::string>(n), false);
    EXPECT_EQ(p.rounds.size(), n % 2 == 0 ? 2u : 3u);
    auto met = check_matchings(p, n);
    EXPECT_EQ(met.size(), n);
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(met.count(std::minmax(i, (i + 1) % n)), 1u) << i;
    EXPECT_EQ(p.coverage.hosts_loaded, n);
    // Ordered: every round again, reversed.
    auto both = plan("ring", std::vector<std::string>(n), true);
    ASSERT_EQ(both.rounds.size(), 2 * p.rounds.size());
    EXPECT_EQ(both.rounds[p.rounds.size()].front().first, p.rounds[0].front().second);
  }
}

TEST(MeshPatterns, LeafLocalRunsEveryLeafsPairsAtOnce) {
  auto l = leaves(64, 8);
  l.push_back("leaf-odd"); // a leaf of three hosts
  l.push_back("leaf-odd");
  l.push_back("leaf-odd");
  auto p = plan("leaf-local", l, false);
  EXPECT_EQ(p.rounds.size(), 7u); // the largest leaf: 8 hosts, 7 rounds
  auto met = check_matchings(p, l.size());
  EXPECT_EQ(met.size(), 8 * 28 + 3u); // every pair inside each leaf, once
  for (auto [pair, count] : met)
    EXPECT_EQ(l[pair.first], l[pair.second]);
  EXPECT_EQ(p.coverage.intra_leaf_pairs, p.coverage.pairs);
  EXPECT_EQ(p.coverage.leaf_pairs_crossed, 0u);
  EXPECT_EQ(p.coverage.leaves, 9u);
}

TEST(MeshPatterns, CrossLeafLoadsEveryUplinkInOneRound) {
  auto p = plan("cross-leaf", leaves(64, 8), false);
  ASSERT_EQ(p.rounds.size(), 1u);
  EXPECT_EQ(p.rounds[0].size(), 32u); // every host in a pair
  check_matchings(p, 64);
  auto l = leaves(64, 8);
  for (auto [a, b] : p.rounds[0])
    EXPECT_NE(l[a], l[b]);
  EXPECT_EQ(p.coverage.leaves_crossing, 8u);
  EXPECT_EQ(p.coverage.leaf_pairs_crossed, 4u);
  EXPECT_EQ(p.coverage.leaf_pairs, 28u);
  EXPECT_EQ(p.reference_rounds, 0u); // one uplink carries 8 of the 32 pair tests
  EXPECT_EQ(p.coverage.busiest_uplink_pairs, 8u);
  // An odd number of leaves: two rounds, so the leaf that sat out meets one; a leaf in both
  // carries 16 of their 48 pair tests, a third, so a round inside the leaves follows.
  auto odd = plan("cross-leaf", leaves(56, 8), false);
  EXPECT_EQ(odd.rounds.size(), 3u);
  EXPECT_EQ(odd.reference_rounds, 1u);
  EXPECT_EQ(odd.coverage.leaves_crossing, 7u);
  // Every leaf pair: L - 1 rounds, and a new partner for each host every round.
  auto all = plan("cross-leaf:7", l, true);
  EXPECT_EQ(all.rounds.size(), 14u);
  EXPECT_EQ(all.coverage.leaf_pairs_crossed, 28u);
  auto met = check_matchings(all, 64);
  for (auto [pair, count] : met)
    EXPECT_EQ(count, 2) << pair.first << "-" << pair.second; // once each way
}

// With four leaves a slow uplink's pairs are half of any cross-leaf round, whatever K: the
// median would be slow and nothing low. Rounds inside the leaves bring it below a third.
TEST(MeshPatterns, CrossLeafOverFewLeavesKeepsEveryUplinkBelowAThird) {
  for (const char* text : {"cross-leaf", "cross-leaf:3"}) {
    SCOPED_TRACE(text);
    auto l = leaves(32, 8);
    auto p = plan(text, l, true);
    const std::size_t cross = p.spec.rounds;
    EXPECT_EQ(p.reference_rounds, cross == 1 ? 1u : 2u);
    ASSERT_EQ(p.rounds.size(), 2 * (cross + p.reference_rounds));
    check_matchings(p, 32);
    for (std::size_t r = 0; r < p.rounds.size(); ++r) {
      const bool reference = r % (p.rounds.size() / 2) >= cross;
      for (auto [a, b] : p.rounds[r])
        EXPECT_EQ(l[a] == l[b], reference) << "round " << r;
    }
    EXPECT_LT(3 * p.coverage.busiest_uplink_pairs, p.coverage.pairs);
    EXPECT_EQ(p.coverage.leaves_crossing, 4u);
  }
  // Two leaves: every crossing pair crosses both uplinks; three rounds inside bring it to 1/4.
  auto two = plan("cross-leaf", leaves(16, 8), false);
  EXPECT_EQ(two.reference_rounds, 3u);
  EXPECT_EQ(describe_plan(two).rfind("cross-leaf:1 + 3 reference rounds inside the leaves: "
                                     "4 rounds, 32 pair tests",
                                     0),
            0u)
      << describe_plan(two);
  // Leaves of one host have no pair inside: the plan says what that costs.
  auto single = plan("cross-leaf", leaves(4, 1), false);
  EXPECT_EQ(single.reference_rounds, 0u);
  EXPECT_NE(describe_plan(single).find("50% across one uplink (a third or more: a slow uplink "
                                       "would set the median"),
            std::string::npos)
      << describe_plan(single);
}

TEST(MeshPatterns, RandomMatchingsAreReproducibleFromTheSeed) {
  auto l = std::vector<std::string>(1001);
  auto p = plan("random:5", l, false);
  ASSERT_EQ(p.rounds.size(), 5u);
  check_matchings(p, l.size());
  for (const auto& round : p.rounds)
    EXPECT_EQ(round.size(), 500u); // one host sits out with n odd
  auto again = plan("random:5", l, false);
  EXPECT_EQ(again.rounds, p.rounds);
  PatternSpec other{PatternKind::kRandom, 5, 2};
  auto different = plan_pattern(other, l, false);
  ASSERT_TRUE(different.ok());
  EXPECT_NE(different->rounds, p.rounds);
  // The first pair of seed 1 is fixed by the standard's mt19937_64: the same everywhere.
  auto small = plan("random:1", std::vector<std::string>(4), false);
  EXPECT_EQ(small.rounds[0].size(), 2u);
  EXPECT_EQ(plan("random", l, false).rounds.size(), kDefaultRandomMatchings);
}

TEST(MeshPatterns, AllPairsIsTheCircleMethod) {
  auto p = plan("all-pairs", std::vector<std::string>(10), true);
  EXPECT_EQ(p.rounds.size(), 18u);
  EXPECT_EQ(p.coverage.pairs, 90u);
}

TEST(MeshPatterns, DescribeStatesTheCost) {
  auto p = plan("ring", leaves(64, 8), true);
  EXPECT_EQ(describe_plan(p), "ring: 4 rounds, 128 pair tests; 64/64 hosts loaded; 8 leaves, "
                              "8/8 with uplink load, 8/28 leaf pairs crossed, 112 pair tests "
                              "inside a leaf, at most 3% across one uplink");
}

TEST(MeshPatterns, ErrorsNameTheProblem) {
  auto bad = parse_pattern("spiral");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'spiral' is not a pattern"), std::string::npos);
  auto count = parse_pattern("ring:3");
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.error().message().find("ring takes no count"), std::string::npos);
  EXPECT_FALSE(parse_pattern("random:0").ok());
  EXPECT_FALSE(parse_pattern("random:x").ok());
  EXPECT_FALSE(parse_pattern("random:100000").ok());
  auto unplaced = plan_pattern(*parse_pattern("leaf-local"), std::vector<std::string>(4), false);
  ASSERT_FALSE(unplaced.ok());
  EXPECT_NE(unplaced.error().message().find("needs every host's leaf"), std::string::npos);
  auto one_leaf = plan_pattern(*parse_pattern("cross-leaf"), leaves(4, 4), false);
  ASSERT_FALSE(one_leaf.ok());
  EXPECT_NE(one_leaf.error().message().find("at least two leaves"), std::string::npos);
  auto too_many = plan_pattern(*parse_pattern("cross-leaf:8"), leaves(64, 8), false);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message().find("K must be at most that"), std::string::npos);
  auto mixed = plan_pattern(*parse_pattern("ring"), {"a", ""}, false);
  EXPECT_FALSE(mixed.ok());
}

} // namespace
} // namespace fabric::probes
