// Rounds for an all-pairs test: in each round every host takes part in at most one pair,
// so no NIC carries two tests at once and a round's results do not disturb each other.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace fabric::probes {

// (source, destination) host indices. In a round no host appears twice.
using MeshPair = std::pair<std::size_t, std::size_t>;
using MeshRound = std::vector<MeshPair>;

// Contention-free rounds by the circle method (round-robin tournament): with n even,
// n - 1 rounds of n / 2 pairs; with n odd, one host sits out each round (a bye), n rounds
// of (n - 1) / 2 pairs. Both are the minimum: every host has n - 1 partners and meets one
// per round; with n odd, a round holds at most (n - 1) / 2 of the n(n - 1) / 2 pairs.
//
// unordered (symmetric tests such as latency): each pair once, as (lower, higher).
// ordered (asymmetric tests such as bandwidth): each pair in both directions, a -> b and
// b -> a in different rounds; twice the rounds above, again the minimum.
// Fewer than two hosts give no rounds.
std::vector<MeshRound> schedule_rounds(std::size_t n_hosts, bool ordered);

} // namespace fabric::probes
