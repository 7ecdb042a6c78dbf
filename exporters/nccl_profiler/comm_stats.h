// One communicator's counters: per collective and size bucket, fixed arrays of relaxed
// atomics, so that NCCL's threads add to them without a lock or an allocation and the
// flusher reads them whenever it likes. A snapshot may see an operation's count before its
// bytes; the next snapshot is whole again, and every counter only grows.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "exporters/nccl_profiler/collectives.h"
#include "exporters/nccl_profiler/profile_format.h"

namespace fabric::nccl_profiler {

// When the GPU worked on one operation: nanoseconds on the GPU's global timer, or on the
// host's CLOCK_MONOTONIC where the kernel gave no timestamp (the two are never compared).
struct BusyInterval {
  uint64_t start = 0;
  uint64_t end = 0;
  bool gpu_clock = true;
};

struct CommIdentity {
  uint64_t hash = 0;
  int nranks = 0;
  int rank = 0;
  int nnodes = 0;
};

class CommStats {
public:
  explicit CommStats(CommIdentity identity) : identity_(identity) {}
  CommStats(const CommStats&) = delete;
  CommStats& operator=(const CommStats&) = delete;

  const CommIdentity& identity() const { return identity_; }

  // On the thread that launches the operation (its startEvent).
  void add_enqueued(Collective c, unsigned bucket, uint64_t bytes);
  // On the thread that sees the operation's last kernel channel end. A cell's busy time is
  // the union of its operations' intervals: the work items of one grouped launch, which
  // the kernel stamps all with the batch's start and end, and operations that overlap,
  // count their common time once. The communicator's busy time is the same union over
  // all its operations, whatever their cell. The union is built in the order operations
  // complete (a high-water mark): an operation that completes after a later one is
  // counted only past that one's end, which NCCL's in-order execution on a communicator
  // makes rare.
  void add_timed(Collective c, unsigned bucket, uint64_t bytes, const BusyInterval& interval);

  // The cells that counted anything, with "last_" fields measured against the previous
  // call (the flusher is the only caller).
  CommProfile snapshot();

private:
  // Kept apart because different threads write them: the launching thread the first, the
  // proxy thread the second.
  struct EnqueuedCell {
    std::atomic<uint64_t> ops{0};
    std::atomic<uint64_t> bytes{0};
  };
  // A union of intervals, built as they complete.
  struct BusyUnion {
    std::atomic<uint64_t> busy_ns{0};
    // The latest end counted so far, per clock.
    std::atomic<uint64_t> covered_gpu{0};
    std::atomic<uint64_t> covered_cpu{0};
    void add(const BusyInterval& interval);
  };
  struct TimedCell {
    std::atomic<uint64_t> ops{0};
    std::atomic<uint64_t> bytes{0};
    BusyUnion busy;
  };
  struct Previous {
    uint64_t timed_bytes = 0;
    uint64_t busy_ns = 0;
  };
  template <typename Cell>
  using Table = std::array<std::array<Cell, kSizeBuckets>, kCollectiveCount>;

  CommIdentity identity_;
  Table<EnqueuedCell> enqueued_;
  Table<TimedCell> timed_;
  Table<Previous> previous_;
  std::atomic<uint64_t> comm_timed_bytes_{0};
  BusyUnion comm_busy_;
  Previous comm_previous_;
};

} // namespace fabric::nccl_profiler
