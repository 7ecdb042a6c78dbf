#include "libs/pair_schedules/mesh_patterns.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "common/units.h"

namespace fabric::probes {
namespace {

// Host indices grouped by leaf, leaves in order of first appearance.
std::vector<std::vector<std::size_t>> group_by_leaf(const std::vector<std::string>& leaves) {
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::string, std::size_t> index;
  for (std::size_t h = 0; h < leaves.size(); ++h) {
    auto [it, added] = index.emplace(leaves[h], groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(h);
  }
  return groups;
}

std::vector<MeshRound> ring_rounds(std::size_t n) {
  if (n == 2) return {{{0, 1}}};
  std::vector<MeshRound> rounds(n % 2 == 0 ? 2 : 3);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t next = (i + 1) % n;
    // Edges (i, i+1) alternate between two rounds; with n odd the closing edge (n-1, 0)
    // would meet host 0 twice and takes a round of its own.
    const std::size_t r = (n % 2 == 1 && i == n - 1) ? 2 : i % 2;
    rounds[r].emplace_back(std::min(i, next), std::max(i, next));
  }
  return rounds;
}

std::vector<MeshRound> leaf_local_rounds(const std::vector<std::vector<std::size_t>>& groups) {
  std::vector<MeshRound> rounds;
  for (const auto& group : groups) {
    auto local = schedule_rounds(group.size(), false);
    if (local.size() > rounds.size()) rounds.resize(local.size());
    for (std::size_t r = 0; r < local.size(); ++r) {
      for (auto [a, b] : local[r])
        rounds[r].emplace_back(group[a], group[b]);
    }
  }
  return rounds;
}

std::vector<MeshRound> cross_leaf_rounds(const std::vector<std::vector<std::size_t>>& groups,
                                         std::size_t leaf_rounds) {
  auto leaf_matchings = schedule_rounds(groups.size(), false);
  leaf_matchings.resize(std::min(leaf_rounds, leaf_matchings.size()));
  std::vector<MeshRound> rounds;
  for (std::size_t r = 0; r < leaf_matchings.size(); ++r) {
    MeshRound round;
    for (auto [a, b] : leaf_matchings[r]) {
      const auto& left = groups[a];
      const auto& right = groups[b];
      // A different offset each round, so that a host meets a new partner.
      for (std::size_t j = 0; j < std::min(left.size(), right.size()); ++j)
        round.emplace_back(left[j], right[(j + r) % right.size()]);
    }
    rounds.push_back(std::move(round));
  }
  return rounds;
}

// Fisher-Yates over std::mt19937_64, whose output the standard fixes: the same seed gives
// the same matchings with every standard library (std::shuffle's would not).
std::vector<MeshRound> random_rounds(std::size_t n, std::size_t matchings, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> order(n);
  std::vector<MeshRound> rounds;
  for (std::size_t k = 0; k < matchings; ++k) {
    for (std::size_t i = 0; i < n; ++i)
      order[i] = i;
    for (std::size_t i = n; i > 1; --i)
      std::swap(order[i - 1], order[rng() % i]);
    MeshRound round;
    for (std::size_t i = 0; i + 1 < n; i += 2)
      round.emplace_back(order[i], order[i + 1]);
    rounds.push_back(std::move(round));
  }
  return rounds;
}

PatternCoverage cover(const std::vector<MeshRound>& rounds, const std::vector<std::string>& leaves,
                      std::size_t leaf_count) {
  PatternCoverage c;
  c.hosts = leaves.size();
  c.leaves = leaf_count;
  c.leaf_pairs = leaf_count * (leaf_count - (leaf_count > 0 ? 1 : 0)) / 2;
  std::vector<bool> loaded(leaves.size());
  std::set<std::pair<std::string, std::string>> crossed;
  std::map<std::string, std::size_t> across; // pair tests across each leaf's uplinks
  for (const auto& round : rounds) {
    for (auto [a, b] : round) {
      ++c.pairs;
      loaded[a] = loaded[b] = true;
      if (leaf_count == 0) continue;
      if (leaves[a] == leaves[b]) {
        ++c.intra_leaf_pairs;
      } else {
        crossed.insert(std::minmax(leaves[a], leaves[b]));
        ++across[leaves[a]];
        ++across[leaves[b]];
      }
    }
  }
  c.hosts_loaded = static_cast<std::size_t>(std::count(loaded.begin(), loaded.end(), true));
  c.leaf_pairs_crossed = crossed.size();
  c.leaves_crossing = across.size();
  for (const auto& [leaf, count] : across)
    c.busiest_uplink_pairs = std::max(c.busiest_uplink_pairs, count);
  return c;
}

bool uplink_share_too_large(const PatternCoverage& c) {
  return c.busiest_uplink_pairs * kUplinkShareDenominator >= c.pairs && c.pairs > 0;
}

// Cross-leaf rounds, then as many of leaf-local's rounds as keep every uplink below a third
// of the pair tests; returns how many of those reference rounds it added.
std::size_t add_reference_rounds(std::vector<MeshRound>& rounds,
                                 const std::vector<std::vector<std::size_t>>& groups,
                                 const std::vector<std::string>& leaves) {
  const auto inside = leaf_local_rounds(groups);
  std::size_t added = 0;
  while (added < inside.size() && uplink_share_too_large(cover(rounds, leaves, groups.size())))
    rounds.push_back(inside[added++]);
  return added;
}

} // namespace

Result<PatternSpec> parse_pattern(std::string_view text) {
  PatternSpec spec;
  auto colon = text.find(':');
  std::string_view name = text.substr(0, colon);
  const bool counted = colon != std::string_view::npos;
  if (name == "all-pairs") {
    spec.kind = PatternKind::kAllPairs;
  } else if (name == "ring") {
    spec.kind = PatternKind::kRing;
  } else if (name == "leaf-local") {
    spec.kind = PatternKind::kLeafLocal;
  } else if (name == "cross-leaf") {
    spec.kind = PatternKind::kCrossLeaf;
  } else if (name == "random") {
    spec.kind = PatternKind::kRandom;
    spec.rounds = kDefaultRandomMatchings;
  } else {
    return Error(
        ErrorCode::kInvalidArgument, "--pattern",
        "'" + std::string(text.substr(0, 64)) +
            "' is not a pattern (all-pairs, ring, leaf-local, cross-leaf[:K], random[:K])");
  }
  if (counted) {
    if (spec.kind != PatternKind::kRandom && spec.kind != PatternKind::kCrossLeaf) {
      return Error(ErrorCode::kInvalidArgument, "--pattern",
                   std::string(name) + " takes no count; only cross-leaf:K and random:K do");
    }
    FABRIC_ASSIGN_OR_RETURN(uint64_t k, units::parse_uint(std::string(text.substr(colon + 1)),
                                                          "--pattern " + std::string(name) + ":K",
                                                          1, kMaxPatternRounds));
    spec.rounds = static_cast<std::size_t>(k);
  }
  return spec;
}

std::string pattern_name(const PatternSpec& spec) {
  switch (spec.kind) {
  case PatternKind::kAllPairs: return "all-pairs";
  case PatternKind::kRing: return "ring";
  case PatternKind::kLeafLocal: return "leaf-local";
  case PatternKind::kCrossLeaf:
    return spec.rounds == 0 ? "cross-leaf" : "cross-leaf:" + std::to_string(spec.rounds);
  case PatternKind::kRandom: return "random:" + std::to_string(spec.rounds);
  }
  return "?";
}

Result<PatternPlan> plan_pattern(const PatternSpec& spec, const std::vector<std::string>& leaves,
                                 bool ordered) {
  const std::size_t n = leaves.size();
  if (n < 2) return Error(ErrorCode::kInvalidArgument, "--pattern", "needs at least two hosts");
  const bool placed =
      std::none_of(leaves.begin(), leaves.end(), [](const std::string& l) { return l.empty(); });
  const bool unplaced =
      std::all_of(leaves.begin(), leaves.end(), [](const std::string& l) { return l.empty(); });
  if (!placed && !unplaced) {
    return Error(ErrorCode::kInvalidArgument, "--pattern",
                 "some hosts have a leaf and some do not: give every host its leaf, or none");
  }
  auto groups = placed ? group_by_leaf(leaves) : std::vector<std::vector<std::size_t>>{};

  PatternPlan plan;
  plan.spec = spec;
  std::vector<MeshRound> rounds;
  switch (spec.kind) {
  case PatternKind::kAllPairs: rounds = schedule_rounds(n, false); break;
  case PatternKind::kRing: rounds = ring_rounds(n); break;
  case PatternKind::kLeafLocal:
  case PatternKind::kCrossLeaf: {
    const std::string name = pattern_name(spec);
    if (!placed) {
      return Error(ErrorCode::kInvalidArgument, "--pattern " + name,
                   "needs every host's leaf: give them as leaf=NAME in the hosts file");
    }
    if (spec.kind == PatternKind::kLeafLocal) {
      rounds = leaf_local_rounds(groups);
      if (rounds.empty()) {
        return Error(ErrorCode::kInvalidArgument, "--pattern " + name,
                     "every leaf has a single host: there is no pair inside a leaf");
      }
    } else {
      if (groups.size() < 2) {
        return Error(ErrorCode::kInvalidArgument, "--pattern " + name,
                     "needs at least two leaves, the hosts have one");
      }
      std::size_t leaf_rounds = spec.rounds != 0 ? spec.rounds : groups.size() % 2 == 0 ? 1 : 2;
      const std::size_t most = groups.size() % 2 == 0 ? groups.size() - 1 : groups.size();
      if (leaf_rounds > most) {
        return Error(ErrorCode::kInvalidArgument, "--pattern " + name,
                     std::to_string(groups.size()) + " leaves meet each other in " +
                         std::to_string(most) + " rounds; K must be at most that");
      }
      plan.spec.rounds = leaf_rounds;
      rounds = cross_leaf_rounds(groups, leaf_rounds);
      plan.reference_rounds = add_reference_rounds(rounds, groups, leaves);
    }
    break;
  }
  case PatternKind::kRandom:
    rounds = random_rounds(n, spec.rounds == 0 ? kDefaultRandomMatchings : spec.rounds, spec.seed);
    break;
  }
  for (auto& round : rounds)
    std::sort(round.begin(), round.end());
  if (ordered) {
    const std::size_t half = rounds.size();
    for (std::size_t r = 0; r < half; ++r) {
      MeshRound reversed;
      for (auto [a, b] : rounds[r])
        reversed.emplace_back(b, a);
      rounds.push_back(std::move(reversed));
    }
  }
  plan.coverage = cover(rounds, leaves, groups.size());
  plan.rounds = std::move(rounds);
  return plan;
}

std::string describe_plan(const PatternPlan& plan) {
  const PatternCoverage& c = plan.coverage;
  std::string out = pattern_name(plan.spec);
  if (plan.reference_rounds > 0) {
    out += " + " + std::to_string(plan.reference_rounds) + " reference round" +
           (plan.reference_rounds > 1 ? "s" : "") + " inside the leaves";
  }
  out += ": " + std::to_string(plan.rounds.size()) + " rounds, " + std::to_string(c.pairs) +
         " pair tests; " + std::to_string(c.hosts_loaded) + "/" + std::to_string(c.hosts) +
         " hosts loaded";
  if (c.leaves > 0) {
    const std::size_t percent =
        c.pairs > 0 ? (100 * c.busiest_uplink_pairs + c.pairs / 2) / c.pairs : 0;
    out += "; " + std::to_string(c.leaves) + " leaves, " + std::to_string(c.leaves_crossing) + "/" +
           std::to_string(c.leaves) + " with uplink load, " + std::to_string(c.leaf_pairs_crossed) +
           "/" + std::to_string(c.leaf_pairs) + " leaf pairs crossed, " +
           std::to_string(c.intra_leaf_pairs) + " pair tests inside a leaf, at most " +
           std::to_string(percent) + "% across one uplink";
    if (uplink_share_too_large(c)) {
      out += " (a third or more: a slow uplink would set the median instead of standing out "
             "of it)";
    }
  }
  return out;
}

} // namespace fabric::probes
