// The preallocated events of the plugin's hot path: one slot per collective or
// point-to-point operation between NCCL's startEvent and the end of its last kernel
// channel. Claiming, updating and releasing a slot is lock-free and allocates nothing.
//
// Who touches a slot (NCCL 2.27 to 2.30, src/plugin/profiler.cc and src/enqueue.cc):
// the Coll/P2p event starts and stops in hostStreamPlanTask, on the thread that launches
// the plan (the application's thread, or a CUDA host-callback thread), once it has handed
// the plan's proxy operations to the proxy thread. Its KernelCh children start, record
// their end and stop on the communicator's proxy progress thread, as the kernel's
// counters advance, which may be before or after the parent's stop. So a slot holds one
// reference for its own stop and one per kernel channel NCCL will report (the
// descriptor's nChannels: NCCL adds one profiler proxy operation per channel of the task),
// and whichever thread drops the last one completes the operation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "exporters/nccl_profiler/collectives.h"

namespace fabric::nccl_profiler {

class CommStats;

struct alignas(64) EventSlot {
  // Upper half: the claim's tag (odd, from the flush epoch it was claimed in); lower half:
  // the references left. 0 is a free slot. One word, so that claiming, releasing and
  // abandoning are each one compare-and-swap and cannot mix up two lives of the slot.
  std::atomic<uint64_t> word{0};
  std::atomic<uint16_t> channels_done{0};
  uint8_t channels_expected = 0;
  Collective collective = Collective::kOther;
  uint8_t bucket = 0;
  CommStats* stats = nullptr;
  uint64_t bytes = 0;
  // Minimum start and maximum end over the channels: the GPU's globaltimer when the
  // kernel reported it, and CLOCK_MONOTONIC when the proxy thread saw a channel the kernel
  // gave no timestamp for.
  std::atomic<uint64_t> gpu_start{UINT64_MAX};
  std::atomic<uint64_t> gpu_end{0};
  std::atomic<uint64_t> cpu_start{UINT64_MAX};
  std::atomic<uint64_t> cpu_end{0};
};
static_assert(sizeof(EventSlot) == 64, "one slot per cache line");

class EventPool {
public:
  explicit EventPool(std::size_t slots);

  // A free slot, with `refs` references and its fields reset; nullptr when the slots
  // near this thread's cursor are all taken (the caller counts a dropped event).
  EventSlot* claim(uint32_t epoch, uint32_t refs);
  // Drops one reference; true when it was the last, and the caller now completes the
  // operation and then calls free(). A release on a slot with no reference left is a stray
  // from NCCL and is ignored.
  bool release(EventSlot* slot);
  void free(EventSlot* slot);
  bool busy(const EventSlot* slot) const;
  // Whether an operation in flight counts into `stats` (a scan; not for the hot path).
  bool references(const CommStats* stats) const;

  // Whether `p` points at a slot of this pool: NCCL hands back only what we gave it, but a
  // handle is checked before it is followed.
  EventSlot* slot_at(const void* p) const;

  // Frees slots claimed `max_age` epochs ago or earlier that still hold references: NCCL
  // never completed them. Returns how many. Called by the flusher, never on the hot path.
  std::size_t abandon_older_than(uint32_t epoch, uint32_t max_age);

  std::size_t size() const { return count_; }

private:
  EventSlot* claim_from(std::size_t index, uint32_t epoch, uint32_t refs);

  static constexpr uint64_t kRefMask = 0xffffffffu;
  std::size_t count_;
  std::unique_ptr<EventSlot[]> slots_;
};

} // namespace fabric::nccl_profiler
