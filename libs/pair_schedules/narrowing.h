// Narrowing down: from a wide pattern's results (mesh_patterns.h), follow-up rounds that
// name the one slow node or link behind its low results, with the evidence.
//
// A result is low when it is worse than the pattern's median by more than `threshold`
// scaled MADs and more than `min_relative` of the median (outliers.h's rule, against the
// whole pattern since each host has few partners in it). Three kinds of fault explain
// low results, and each predicts which pairs are low:
//   node X         every pair with X is low, whatever the partner (its NIC, cable, port);
//   uplink of L    every pair between leaf L and another leaf is low, pairs inside L are
//                  not (the leaf's uplinks to the spine);
//   path A-B       only the pair A-B is low (one link or route that only they share).
// A single fault must explain every low result, so the candidates are the few that
// explain the first one: its two hosts, their two leaves' uplinks and its path. Each
// follow-up round tests them all at once against reference hosts (a candidate node
// against a host of its own leaf, an uplink against a host of an untouched leaf, a path
// again), and every result removes the candidates it contradicts. The verdict is the one
// candidate left once its low results are confirmed (a path by a second measurement).
// That takes a bounded number of rounds whatever the size of the mesh (at most 3 in
// practice, 2 log2(n) + 2 as the hard limit); the results are observations of pairs, so
// memory is linear in the rounds, never n^2.
//
// When no single fault explains the low results (two faults, or noise), the verdict says
// so and lists them; when references run out, it names the candidates left.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "libs/pair_schedules/mesh_schedule.h"
#include "libs/pair_schedules/outliers.h"

namespace fabric::probes {

struct PairResult {
  std::size_t source = 0, destination = 0;
  std::optional<double> value; // nullopt: the pair failed
  std::size_t round = 0;       // 1-based, the pattern's rounds first
};

enum class FaultKind { kNone, kNode, kUplink, kPath, kAmbiguous, kUnexplained };
const char* fault_kind_name(FaultKind kind); // "none", "node", "uplink", "path", ...

// A result that supports the verdict or rules out another candidate.
struct Evidence {
  PairResult result;
  std::string why; // "low", or "normal: rules out node b"
};

inline constexpr std::size_t kMaxEvidence = 8;

struct FaultVerdict {
  FaultKind kind = FaultKind::kNone;
  std::vector<std::size_t> hosts;      // node: {x}; path: {a, b}
  std::string leaf;                    // uplink
  std::vector<std::string> candidates; // ambiguous: the ones left
  std::vector<Evidence> evidence;      // at most kMaxEvidence low, then what ruled out others
  std::size_t low_results = 0;         // over the pattern and the follow-ups
};

struct NarrowingOptions {
  Better better = Better::kHigher;
  double threshold = 3.5;     // scaled MADs
  double min_relative = 0.20; // of the median
  std::size_t max_rounds = 0; // follow-up rounds; 0: 2 log2(n) + 2
  bool follow_up = true;      // false: judge the pattern's results alone, run no round
  // Judge the logarithm of the values: where noise is a factor rather than an offset
  // (bandwidth between ranks that share cores), a linear MAD of widely spread healthy
  // results would put the limit below zero and hide any slow result. The floor then is
  // "min_relative below the median" as a ratio.
  bool ratio_scale = false;
};

// Runs one follow-up round (a matching); returns one value per pair, nullopt for a pair
// that failed.
using RoundRunner =
    std::function<std::vector<std::optional<double>>(const MeshRound& round, std::size_t number)>;

struct Narrowing {
  double baseline = 0; // the pattern's median
  double limit = 0;    // how much worse than the baseline a low result is (in value units)
  std::size_t pattern_rounds = 0;
  std::size_t follow_up_rounds = 0;
  std::vector<PairResult> follow_ups;
  FaultVerdict verdict;
};

// `names` and `leaves` have one entry per host (leaves all "" without places); `pattern`
// holds the pattern's results, whose rounds are 1..pattern_rounds. Errors for options out
// of range or a host index out of range.
Result<Narrowing> narrow_down(const std::vector<PairResult>& pattern, std::size_t pattern_rounds,
                              const std::vector<std::string>& names,
                              const std::vector<std::string>& leaves,
                              const NarrowingOptions& options, const RoundRunner& run_round);

// One line: "node h17: slow with every partner (5 low results)".
std::string describe_verdict(const FaultVerdict& verdict, const std::vector<std::string>& names);

} // namespace fabric::probes
