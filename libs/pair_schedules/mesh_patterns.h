// Test patterns for a mesh too large for all pairs, each with a known cost.
//
// Every pattern is a list of rounds, and every round a matching (mesh_schedule.h): no host
// takes part in two pairs of one round, so a round's results do not disturb each other.
// Patterns are built as unordered pairs; for an ordered test (bandwidth) every round is
// followed later by its reverse, so each direction is measured, at twice the rounds.
//
//   pattern      rounds (unordered; ordered: twice)       what it loads
//   all-pairs    n - 1 (n even), n (n odd)                every pair: the reference, n^2 results
//   ring         2 (n even), 3 (n odd)                    every host's link, with two partners
//   leaf-local   m - 1 or m, m = the largest leaf         every pair inside each leaf, all
//                                                         leaves at once; no uplink
//   cross-leaf   K leaf rounds (default 1, 2 if the       every host of a leaf paired with a
//                number of leaves is odd), at most L - 1, host of another leaf at once: every
//                + reference rounds inside the leaves     uplink under full load
//                while one uplink has a third or more
//   random:K     K                                        K random perfect matchings, seeded:
//                                                         each host meets K partners
//
// Hosts carry their leaf (mesh_hosts.h); leaf-local and cross-leaf need every host's.
//
// The narrowing judges a result against the median of all of them, so a slow uplink only
// stands out while its pairs are a minority. In a cross-leaf round every pair crosses two
// uplinks, so one leaf's uplink carries 2/L of the pairs whatever K (half of them with
// four leaves): with few leaves (fewer than eight at the default K), cross-leaf adds rounds
// of pairs inside the leaves (leaf-local's first rounds), which cross no uplink, until every
// uplink carries less than a third of the pair tests. Every plan reports that largest
// share, and its description warns when it is a third or more (a ring or random matching
// over few leaves).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "libs/pair_schedules/mesh_schedule.h"

namespace fabric::probes {

enum class PatternKind { kAllPairs, kRing, kLeafLocal, kCrossLeaf, kRandom };

struct PatternSpec {
  PatternKind kind = PatternKind::kAllPairs;
  std::size_t rounds = 0; // random: matchings (default 4); cross-leaf: leaf rounds (0: fewest)
  uint64_t seed = 1;      // random: the same seed gives the same matchings
};

inline constexpr std::size_t kDefaultRandomMatchings = 4;
inline constexpr std::size_t kMaxPatternRounds = 1000;

// "all-pairs", "ring", "leaf-local", "cross-leaf[:K]" or "random[:K]".
Result<PatternSpec> parse_pattern(std::string_view text);
std::string pattern_name(const PatternSpec& spec); // parse_pattern's form

// What a plan puts under load.
struct PatternCoverage {
  std::size_t pairs = 0;                // pair tests over all rounds
  std::size_t hosts = 0;                // in the mesh
  std::size_t hosts_loaded = 0;         // in at least one pair
  std::size_t leaves = 0;               // distinct leaves (0 when hosts have none)
  std::size_t leaves_crossing = 0;      // leaves whose uplinks carry at least one pair
  std::size_t leaf_pairs = 0;           // unordered pairs of distinct leaves
  std::size_t leaf_pairs_crossed = 0;   // of those, the ones some pair crosses
  std::size_t intra_leaf_pairs = 0;     // pair tests inside one leaf
  std::size_t busiest_uplink_pairs = 0; // pair tests across the uplinks of the busiest leaf
};

// A fault that touches this share of the pair tests or more can set the median itself.
inline constexpr std::size_t kUplinkShareDenominator = 3; // a third

struct PatternPlan {
  PatternSpec spec;
  std::size_t reference_rounds = 0; // cross-leaf: rounds inside the leaves (ordered: twice)
  std::vector<MeshRound> rounds;
  PatternCoverage coverage;
};

// `leaves` has one entry per host, all empty when the hosts have no places.
Result<PatternPlan> plan_pattern(const PatternSpec& spec, const std::vector<std::string>& leaves,
                                 bool ordered);

// "ring: 4 rounds, 128 pair tests; 64/64 hosts loaded; 8 leaves, 8/8 with uplink load,
//  8/28 leaf pairs crossed, 112 pair tests inside a leaf, at most 6% across one uplink"
std::string describe_plan(const PatternPlan& plan);

} // namespace fabric::probes
