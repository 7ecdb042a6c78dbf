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
// reference for its own stop and one per kernel channel NCCL announces (the descriptor's
// nChannels: NCCL adds one profiler proxy operation per channel of the task), a channel
// beyond those takes its own when it starts, and whichever thread drops the last one
// completes the operation. An operation NCCL never completes is abandoned by the flusher;
// the handles of that life of its slot are dead from then on (generations).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "exporters/nccl_profiler/collectives.h"

namespace fabric::nccl_profiler {

class CommStats;

// A handle names one life of a slot: the slot's index and the generation it was claimed
// with (see EventPool::claim). NCCL treats handles as opaque, non-null pointers; bit 0 is
// left to the caller (the plugin marks kernel-channel handles with it). 0 is no handle.
using EventHandle = uintptr_t;
static_assert(sizeof(EventHandle) == 8, "a handle carries a 32-bit generation and an index");

struct alignas(64) EventSlot {
  // Bits 63..32: the generation of the slot's current or last life; 31..16: the flush
  // epoch it was claimed in (low 16 bits); 15: claimed; 14..0: the references left. One
  // word, so that claiming, releasing and abandoning are each one compare-and-swap and a
  // late event of an earlier life (its handle's generation is another) changes nothing.
  std::atomic<uint64_t> word{0};
  // Kernel channels started: those beyond `channels_expected` take a reference of their
  // own (CollNet/SHARP report channels NCCL's nChannels does not count).
  std::atomic<uint16_t> channels_started{0};
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

  // Claims a free slot with `refs` references and its fields reset, and returns its
  // handle; 0 when the slots near this thread's cursor are all taken (the caller counts a
  // dropped event). `*slot` is the slot, for the claimer to fill in.
  EventHandle claim(uint32_t epoch, uint32_t refs, EventSlot** slot);
  // The slot of `handle` while that life of it holds references; nullptr for a handle of
  // an earlier life, of a completed or abandoned operation, or that is not one of ours.
  // A caller that then writes the slot's timestamps races only with the instant between
  // this check and a reclaim: the generation makes a stale handle harmless everywhere
  // else, and its references are never touched.
  EventSlot* open(EventHandle handle) const;
  // One more reference for this life of the slot, if it still has one (a kernel channel
  // beyond the announced ones); false when the operation has completed or is full.
  bool add_reference(EventHandle handle);
  // Drops one reference of this life; true when it was the last, and the caller now
  // completes the operation (slot_of) and then calls free(). A release of another life,
  // or of a slot with no reference left, is a stray and is ignored.
  bool release(EventHandle handle);
  EventSlot* slot_of(EventHandle handle) const;
  void free(EventSlot* slot);
  // Whether an operation in flight counts into `stats` (a scan; not for the hot path).
  bool references(const CommStats* stats) const;

  // Frees slots claimed `max_age` epochs ago or earlier that still hold references: NCCL
  // never completed them. Returns how many. Called by the flusher, never on the hot path.
  std::size_t abandon_older_than(uint32_t epoch, uint32_t max_age);

  std::size_t size() const { return count_; }

private:
  EventHandle claim_from(std::size_t index, uint32_t epoch, uint32_t refs, EventSlot** slot);
  // The slot a handle names and the generation it expects; nullptr when out of range.
  EventSlot* decode(EventHandle handle, uint32_t& generation) const;

  std::size_t count_;
  std::unique_ptr<EventSlot[]> slots_;
};

} // namespace fabric::nccl_profiler
