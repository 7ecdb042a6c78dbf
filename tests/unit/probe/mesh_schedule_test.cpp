// All-pairs rounds: complete, contention-free and as few as possible, for 1 to 17 hosts.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "libs/pair_schedules/mesh_schedule.h"

namespace fabric::probes {
namespace {

std::size_t minimal_rounds(std::size_t n, bool ordered) {
  if (n < 2) return 0;
  std::size_t unordered = n % 2 == 0 ? n - 1 : n;
  return ordered ? 2 * unordered : unordered;
}

void check_schedule(std::size_t n, bool ordered) {
  SCOPED_TRACE("n=" + std::to_string(n) + (ordered ? " ordered" : " unordered"));
  auto rounds = schedule_rounds(n, ordered);
  EXPECT_EQ(rounds.size(), minimal_rounds(n, ordered));

  std::map<MeshPair, int> seen;         // directed when ordered, (low, high) otherwise
  std::map<MeshPair, std::size_t> when; // round of each directed pair
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    std::set<std::size_t> busy;
    EXPECT_FALSE(rounds[r].empty()) << "round " << r;
    for (auto [a, b] : rounds[r]) {
      ASSERT_LT(a, n);
      ASSERT_LT(b, n);
      EXPECT_NE(a, b);
      EXPECT_TRUE(busy.insert(a).second) << "host " << a << " twice in round " << r;
      EXPECT_TRUE(busy.insert(b).second) << "host " << b << " twice in round " << r;
      if (!ordered) {
        EXPECT_LT(a, b);
      }
      ++seen[{a, b}];
      when[{a, b}] = r;
    }
  }
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b || (!ordered && a > b)) continue;
      EXPECT_EQ(seen[MeshPair(a, b)], 1) << a << " -> " << b;
    }
  }
  if (ordered) {
    for (std::size_t a = 0; a < n; ++a) {
      for (std::size_t b = a + 1; b < n; ++b)
        EXPECT_NE(when[MeshPair(a, b)], when[MeshPair(b, a)])
            << a << " <-> " << b << " in one round";
    }
  }
}

TEST(MeshSchedule, EveryPairOnceNoHostTwiceMinimalRounds) {
  for (std::size_t n = 1; n <= 17; ++n) {
    check_schedule(n, false);
    check_schedule(n, true);
  }
}

TEST(MeshSchedule, SmallCasesReadNaturally) {
  EXPECT_TRUE(schedule_rounds(0, true).empty());
  EXPECT_TRUE(schedule_rounds(1, false).empty());
  auto two = schedule_rounds(2, true);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0], (MeshRound{{0, 1}}));
  EXPECT_EQ(two[1], (MeshRound{{1, 0}}));
  // Three hosts: one sits out each round.
  auto three = schedule_rounds(3, false);
  ASSERT_EQ(three.size(), 3u);
  for (const auto& round : three)
    EXPECT_EQ(round.size(), 1u);
}

} // namespace
} // namespace fabric::probes
