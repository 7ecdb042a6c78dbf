#include "exporters/nccl_profiler/comm_stats.h"

#include <algorithm>

namespace fabric::nccl_profiler {

void CommStats::add_enqueued(Collective c, unsigned bucket, uint64_t bytes) {
  auto& cell = enqueued_[static_cast<std::size_t>(c)][bucket];
  cell.ops.fetch_add(1, std::memory_order_relaxed);
  cell.bytes.fetch_add(bytes, std::memory_order_relaxed);
}

void CommStats::BusyUnion::add(const BusyInterval& interval) {
  auto& covered = interval.gpu_clock ? covered_gpu : covered_cpu;
  uint64_t until = covered.load(std::memory_order_relaxed);
  do {
    if (interval.end <= until) return; // within what is counted already
  } while (!covered.compare_exchange_weak(until, interval.end, std::memory_order_relaxed));
  busy_ns.fetch_add(interval.end - std::max(interval.start, until), std::memory_order_relaxed);
}

void CommStats::add_timed(Collective c, unsigned bucket, uint64_t bytes,
                          const BusyInterval& interval) {
  auto& cell = timed_[static_cast<std::size_t>(c)][bucket];
  cell.ops.fetch_add(1, std::memory_order_relaxed);
  cell.bytes.fetch_add(bytes, std::memory_order_relaxed);
  cell.busy.add(interval);
  comm_timed_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  comm_busy_.add(interval);
}

CommProfile CommStats::snapshot() {
  CommProfile comm{identity_.hash, identity_.nranks, identity_.rank, identity_.nnodes, {},
                   std::nullopt};
  for (std::size_t c = 0; c < kCollectiveCount; ++c) {
    for (std::size_t b = 0; b < kSizeBuckets; ++b) {
      ProfileCell cell;
      cell.ops = enqueued_[c][b].ops.load(std::memory_order_relaxed);
      if (cell.ops == 0) continue;
      cell.collective = static_cast<Collective>(c);
      cell.size_bytes = bucket_lower_bound(static_cast<unsigned>(b));
      cell.bytes = enqueued_[c][b].bytes.load(std::memory_order_relaxed);
      cell.timed_ops = timed_[c][b].ops.load(std::memory_order_relaxed);
      cell.timed_bytes = timed_[c][b].bytes.load(std::memory_order_relaxed);
      cell.busy_ns = timed_[c][b].busy.busy_ns.load(std::memory_order_relaxed);
      // An operation is timed after it was enqueued, but the two loads above are not one
      // instant: never report more timed work than work.
      cell.timed_ops = std::min(cell.timed_ops, cell.ops);
      cell.timed_bytes = std::min(cell.timed_bytes, cell.bytes);
      Previous& previous = previous_[c][b];
      cell.last_timed_bytes = cell.timed_bytes - std::min(previous.timed_bytes, cell.timed_bytes);
      cell.last_busy_ns = cell.busy_ns - std::min(previous.busy_ns, cell.busy_ns);
      previous = {cell.timed_bytes, cell.busy_ns};
      comm.cells.push_back(cell);
    }
  }
  CommBusy busy;
  busy.timed_bytes = comm_timed_bytes_.load(std::memory_order_relaxed);
  busy.busy_ns = comm_busy_.busy_ns.load(std::memory_order_relaxed);
  busy.last_timed_bytes = busy.timed_bytes - std::min(comm_previous_.timed_bytes, busy.timed_bytes);
  busy.last_busy_ns = busy.busy_ns - std::min(comm_previous_.busy_ns, busy.busy_ns);
  comm_previous_ = {busy.timed_bytes, busy.busy_ns};
  comm.busy = busy;
  return comm;
}

} // namespace fabric::nccl_profiler
