#include "probes/mesh/pair_scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

namespace fabric::probes {

void run_scheduled_pairs(const std::vector<MeshRound>& rounds, std::size_t n_hosts,
                         std::size_t parallel, const ScheduledPairFn& run_pair) {
  struct Slot {
    std::size_t round, index, a, b;
  };
  std::vector<Slot> slots;
  std::vector<std::deque<std::size_t>> queue(n_hosts); // each host's pairs, in order
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    for (std::size_t i = 0; i < rounds[r].size(); ++i) {
      auto [a, b] = rounds[r][i];
      queue[a].push_back(slots.size());
      queue[b].push_back(slots.size());
      slots.push_back({r, i, a, b});
    }
  }
  if (slots.empty()) return;

  std::mutex mutex;
  std::condition_variable changed;
  std::set<std::size_t> ready; // lowest first: rounds keep their order where they can
  std::size_t left = slots.size();
  auto check = [&](std::size_t host) {
    if (queue[host].empty()) return;
    const std::size_t s = queue[host].front();
    if (queue[slots[s].a].front() == s && queue[slots[s].b].front() == s) ready.insert(s);
  };
  for (std::size_t h = 0; h < n_hosts; ++h)
    check(h);

  auto worker = [&] {
    std::unique_lock lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return !ready.empty() || left == 0; });
      if (left == 0) return;
      const std::size_t s = *ready.begin();
      ready.erase(ready.begin());
      lock.unlock();
      run_pair(slots[s].round, slots[s].index);
      lock.lock();
      --left;
      queue[slots[s].a].pop_front();
      queue[slots[s].b].pop_front();
      check(slots[s].a);
      check(slots[s].b);
      changed.notify_all();
    }
  };
  const std::size_t threads = std::clamp<std::size_t>(parallel, 1, slots.size());
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back(worker);
  for (auto& t : pool)
    t.join();
}

} // namespace fabric::probes
