// Runs rounds of pairs so that a slow or dead host costs only its own pairs.
//
// The rounds fix each host's order of pairs; a pair starts as soon as both its hosts are
// done with their earlier pairs, not when the whole previous round is. A host that hangs
// until the pair timeout delays only the pairs it takes part in (and, through them, its
// partners' later pairs), never everyone's round; no host is ever in two pairs at once.
// At most `parallel` pairs run at a time, on as many threads.
#pragma once

#include <cstddef>
#include <functional>

#include "libs/pair_schedules/mesh_schedule.h"

namespace fabric::probes {

inline constexpr std::size_t kDefaultParallelPairs = 256;
inline constexpr std::size_t kMaxParallelPairs = 4096;

// Called for each pair with its round (0-based) and index in that round; called from
// several threads at once.
using ScheduledPairFn = std::function<void(std::size_t round, std::size_t index)>;

void run_scheduled_pairs(const std::vector<MeshRound>& rounds, std::size_t n_hosts,
                         std::size_t parallel, const ScheduledPairFn& run_pair);

} // namespace fabric::probes
