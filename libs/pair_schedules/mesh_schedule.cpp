#include "libs/pair_schedules/mesh_schedule.h"

#include <algorithm>

namespace fabric::probes {

std::vector<MeshRound> schedule_rounds(std::size_t n_hosts, bool ordered) {
  std::vector<MeshRound> rounds;
  if (n_hosts < 2) return rounds;
  // With an odd count a phantom host joins; whoever meets it has the round off.
  const std::size_t m = n_hosts % 2 == 0 ? n_hosts : n_hosts + 1;
  const std::size_t phantom = n_hosts; // only exists when m > n_hosts

  // The circle method: host m - 1 stays put, the others rotate one seat per round; seat i
  // plays seat m - 1 - i.
  std::vector<std::size_t> seats(m);
  for (std::size_t i = 0; i < m; ++i)
    seats[i] = i;
  for (std::size_t r = 0; r + 1 < m; ++r) {
    MeshRound round;
    for (std::size_t i = 0; i < m / 2; ++i) {
      std::size_t a = seats[i], b = seats[m - 1 - i];
      if (a == phantom || b == phantom) continue;
      round.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(round.begin(), round.end());
    rounds.push_back(std::move(round));
    std::rotate(seats.begin(), seats.end() - 2, seats.end() - 1);
  }
  if (!ordered) return rounds;

  // The same rounds again, reversed: every b -> a lands in a different round from its
  // a -> b, and every round is still a matching.
  const std::size_t half = rounds.size();
  for (std::size_t r = 0; r < half; ++r) {
    MeshRound reversed;
    for (const auto& [a, b] : rounds[r])
      reversed.emplace_back(b, a);
    rounds.push_back(std::move(reversed));
  }
  return rounds;
}

} // namespace fabric::probes
