// Fault injection, for tests only: FABRIC_NCCLTEST_FAULT makes one rank misbehave so that
// the per-rank check, the watchdog and --pairs can be shown to name it. A run with faults
// says so loudly (stderr, a header line, the JSON). Never set it in production.
//
//   corrupt=R         rank R changes one element of its result before checking it
//   stall=R[@SIZE]    rank R stops before the timed loop of the first size >= SIZE
//                     (default: the first size) and waits, bounded, to be aborted
//   slow-pair=A-B     in --pairs, every operation of the pair of nodes A and B (indices in
//                     the pair report's node order) takes 2 ms longer
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"

namespace fabric::nccltest {

class AbortRequest;

inline constexpr const char* kFaultEnv = "FABRIC_NCCLTEST_FAULT";

struct FaultPlan {
  std::optional<int> corrupt_rank;
  std::optional<int> stall_rank;
  std::size_t stall_from_bytes = 0;
  std::optional<std::pair<int, int>> slow_pair; // node indices, lower first
  std::optional<int> slow_node;                 // a node index: slow with every partner
  std::chrono::microseconds slow_delay{2000};
  std::string text; // the variable's value, for reports

  bool any() const { return corrupt_rank || stall_rank || slow_pair || slow_node; }
};

// An empty or absent value is no fault; anything unparsable is a usage error naming the
// variable.
Result<FaultPlan> parse_fault_plan(std::string_view text);

// Waits as a stalled rank does: in short sleeps, for at most `limit` or until `abort` is
// posted (the watchdog's order, which the caller then carries out).
void stall_for_test(const AbortRequest* abort,
                    std::chrono::seconds limit = std::chrono::seconds(600));

} // namespace fabric::nccltest
