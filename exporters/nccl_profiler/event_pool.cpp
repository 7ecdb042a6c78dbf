#include "exporters/nccl_profiler/event_pool.h"

#include <algorithm>
#include <cstdint>

namespace fabric::nccl_profiler {
namespace {

// How many slots a claim looks at, twice, before it gives up: a full pool must cost a
// bounded number of cache lines, not a scan of all of them.
constexpr std::size_t kProbe = 64;

constexpr uint64_t kRefMask = 0x7fff;
constexpr uint64_t kClaimed = 0x8000;
// References one life may hold: its stop and up to this many kernel channels.
constexpr uint64_t kMaxRefs = kRefMask;

uint32_t generation_of(uint64_t word) {
  return static_cast<uint32_t>(word >> 32);
}
uint32_t epoch_of(uint64_t word) {
  return static_cast<uint32_t>(word >> 16) & 0xffff;
}

// Each thread claims from its own cursor, so that the threads of different communicators
// start from different parts of the pool instead of racing for the same slots.
std::size_t next_thread_start() {
  static std::atomic<std::size_t> threads{0};
  // Fibonacci hashing spreads consecutive threads over the whole pool.
  return (threads.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ull) >> 40;
}
thread_local std::size_t t_cursor = next_thread_start();

} // namespace

EventPool::EventPool(std::size_t slots)
    : count_(slots == 0 ? 1 : slots), slots_(std::make_unique<EventSlot[]>(count_)) {
  // Slot i's generations are i, i + count, i + 2 count, ...: two slots never share one,
  // so a handle altered to name a neighbouring slot does not match it either.
  for (std::size_t i = 0; i < count_; ++i)
    slots_[i].word.store(uint64_t{static_cast<uint32_t>(i)} << 32, std::memory_order_relaxed);
}

EventHandle EventPool::claim(uint32_t epoch, uint32_t refs, EventSlot** slot) {
  // Near this thread's cursor first; if those are all in flight (another thread's
  // operations may sit there), once more half the pool away.
  for (std::size_t start : {t_cursor % count_, (t_cursor + count_ / 2) % count_}) {
    if (EventHandle handle = claim_from(start, epoch, refs, slot)) return handle;
  }
  return 0;
}

EventHandle EventPool::claim_from(std::size_t index, uint32_t epoch, uint32_t refs,
                                  EventSlot** out) {
  refs = static_cast<uint32_t>(std::min<uint64_t>(refs, kMaxRefs));
  for (std::size_t probe = 0; probe < kProbe; ++probe) {
    std::size_t at = index;
    EventSlot& slot = slots_[at];
    index = index + 1 == count_ ? 0 : index + 1;
    uint64_t word = slot.word.load(std::memory_order_relaxed);
    if (word & kClaimed) continue;
    uint32_t generation = generation_of(word) + static_cast<uint32_t>(count_);
    uint64_t claimed =
        (uint64_t{generation} << 32) | (uint64_t{epoch & 0xffff} << 16) | kClaimed | refs;
    if (!slot.word.compare_exchange_strong(word, claimed, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
      continue;
    }
    t_cursor = index;
    slot.channels_started.store(0, std::memory_order_relaxed);
    slot.gpu_start.store(UINT64_MAX, std::memory_order_relaxed);
    slot.gpu_end.store(0, std::memory_order_relaxed);
    slot.cpu_start.store(UINT64_MAX, std::memory_order_relaxed);
    slot.cpu_end.store(0, std::memory_order_relaxed);
    *out = &slot;
    // Index + 1 so that no handle is 0; bit 0 stays free for the caller.
    return (EventHandle{generation} << 32) | ((EventHandle{at} + 1) << 1);
  }
  return 0;
}

EventSlot* EventPool::decode(EventHandle handle, uint32_t& generation) const {
  EventHandle index = (handle & 0xffffffffu) >> 1;
  if (index == 0 || index > count_) return nullptr;
  generation = static_cast<uint32_t>(handle >> 32);
  return &slots_[index - 1];
}

EventSlot* EventPool::slot_of(EventHandle handle) const {
  uint32_t generation = 0;
  return decode(handle, generation);
}

EventSlot* EventPool::open(EventHandle handle) const {
  uint32_t generation = 0;
  EventSlot* slot = decode(handle, generation);
  if (slot == nullptr) return nullptr;
  uint64_t word = slot->word.load(std::memory_order_acquire);
  if (generation_of(word) != generation || (word & kRefMask) == 0) return nullptr;
  return slot;
}

bool EventPool::add_reference(EventHandle handle) {
  uint32_t generation = 0;
  EventSlot* slot = decode(handle, generation);
  if (slot == nullptr) return false;
  uint64_t word = slot->word.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t refs = word & kRefMask;
    if (generation_of(word) != generation || refs == 0 || refs == kMaxRefs) return false;
    if (slot->word.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
      return true;
    }
  }
}

bool EventPool::release(EventHandle handle) {
  uint32_t generation = 0;
  EventSlot* slot = decode(handle, generation);
  if (slot == nullptr) return false;
  uint64_t word = slot->word.load(std::memory_order_relaxed);
  for (;;) {
    if (generation_of(word) != generation || (word & kRefMask) == 0) return false;
    if (slot->word.compare_exchange_weak(word, word - 1, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
      return ((word - 1) & kRefMask) == 0;
    }
  }
}

void EventPool::free(EventSlot* slot) {
  // The generation stays: the next claim moves it on.
  uint64_t word = slot->word.load(std::memory_order_relaxed);
  slot->word.store(uint64_t{generation_of(word)} << 32, std::memory_order_release);
}

bool EventPool::references(const CommStats* stats) const {
  for (std::size_t i = 0; i < count_; ++i) {
    if ((slots_[i].word.load(std::memory_order_acquire) & kClaimed) && slots_[i].stats == stats)
      return true;
  }
  return false;
}

std::size_t EventPool::abandon_older_than(uint32_t epoch, uint32_t max_age) {
  std::size_t abandoned = 0;
  for (std::size_t i = 0; i < count_; ++i) {
    EventSlot& slot = slots_[i];
    uint64_t word = slot.word.load(std::memory_order_acquire);
    // Free, or no reference left: its last releaser is completing it right now.
    if (!(word & kClaimed) || (word & kRefMask) == 0) continue;
    if (((epoch - epoch_of(word)) & 0xffff) < max_age) continue;
    // One compare-and-swap on the whole word: it fails if the slot was released or
    // claimed again since it was read, so only this life of the slot is abandoned. The
    // generation stays, so this life's late events find no reference to take.
    if (slot.word.compare_exchange_strong(word, uint64_t{generation_of(word)} << 32,
                                          std::memory_order_acq_rel)) {
      ++abandoned;
    }
  }
  return abandoned;
}

} // namespace fabric::nccl_profiler
