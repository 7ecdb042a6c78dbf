#include "exporters/nccl_profiler/event_pool.h"

#include <cstdint>

namespace fabric::nccl_profiler {
namespace {

// How many slots a claim looks at, twice, before it gives up: a full pool must cost a
// bounded number of cache lines, not a scan of all of them.
constexpr std::size_t kProbe = 64;

// Each thread claims from its own cursor, so that the threads of different communicators
// start from different parts of the pool instead of racing for the same slots.
std::size_t next_thread_start() {
  static std::atomic<std::size_t> threads{0};
  // Fibonacci hashing spreads consecutive threads over the whole pool.
  return (threads.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ull) >> 40;
}
thread_local std::size_t t_cursor = next_thread_start();

uint64_t tag_of(uint32_t epoch) {
  return ((uint64_t{epoch} << 1) | 1) & 0xffffffffu;
}

} // namespace

EventPool::EventPool(std::size_t slots)
    : count_(slots == 0 ? 1 : slots), slots_(std::make_unique<EventSlot[]>(count_)) {}

EventSlot* EventPool::claim(uint32_t epoch, uint32_t refs) {
  // Near this thread's cursor first; if those are all in flight (another thread's
  // operations may sit there), once more half the pool away.
  for (std::size_t start : {t_cursor % count_, (t_cursor + count_ / 2) % count_}) {
    if (EventSlot* slot = claim_from(start, epoch, refs)) return slot;
  }
  return nullptr;
}

EventSlot* EventPool::claim_from(std::size_t index, uint32_t epoch, uint32_t refs) {
  const uint64_t word = (tag_of(epoch) << 32) | refs;
  for (std::size_t probe = 0; probe < kProbe; ++probe) {
    EventSlot& slot = slots_[index];
    index = index + 1 == count_ ? 0 : index + 1;
    uint64_t expected = 0;
    if (slot.word.load(std::memory_order_relaxed) != 0 ||
        !slot.word.compare_exchange_strong(expected, word, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
      continue;
    }
    t_cursor = index;
    slot.channels_done.store(0, std::memory_order_relaxed);
    slot.gpu_start.store(UINT64_MAX, std::memory_order_relaxed);
    slot.gpu_end.store(0, std::memory_order_relaxed);
    slot.cpu_start.store(UINT64_MAX, std::memory_order_relaxed);
    slot.cpu_end.store(0, std::memory_order_relaxed);
    return &slot;
  }
  return nullptr;
}

bool EventPool::release(EventSlot* slot) {
  uint64_t word = slot->word.load(std::memory_order_relaxed);
  for (;;) {
    if ((word & kRefMask) == 0) return false;
    if (slot->word.compare_exchange_weak(word, word - 1, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
      return ((word - 1) & kRefMask) == 0;
    }
  }
}

void EventPool::free(EventSlot* slot) {
  slot->word.store(0, std::memory_order_release);
}

bool EventPool::busy(const EventSlot* slot) const {
  return (slot->word.load(std::memory_order_acquire) & kRefMask) != 0;
}

bool EventPool::references(const CommStats* stats) const {
  for (std::size_t i = 0; i < count_; ++i) {
    if (busy(&slots_[i]) && slots_[i].stats == stats) return true;
  }
  return false;
}

EventSlot* EventPool::slot_at(const void* p) const {
  auto address = reinterpret_cast<uintptr_t>(p);
  auto base = reinterpret_cast<uintptr_t>(slots_.get());
  if (address < base || address >= base + count_ * sizeof(EventSlot)) return nullptr;
  if ((address - base) % sizeof(EventSlot) != 0) return nullptr;
  return &slots_[(address - base) / sizeof(EventSlot)];
}

std::size_t EventPool::abandon_older_than(uint32_t epoch, uint32_t max_age) {
  std::size_t abandoned = 0;
  for (std::size_t i = 0; i < count_; ++i) {
    EventSlot& slot = slots_[i];
    uint64_t word = slot.word.load(std::memory_order_acquire);
    // No reference left: its last releaser is completing it right now.
    if ((word & kRefMask) == 0) continue;
    auto claimed = static_cast<uint32_t>(word >> 33);
    if (((epoch - claimed) & 0x7fffffffu) < max_age) continue;
    // One compare-and-swap on the whole word: it fails if the slot was released, freed or
    // claimed again since it was read, so only this life of the slot is abandoned.
    if (slot.word.compare_exchange_strong(word, 0, std::memory_order_acq_rel)) ++abandoned;
  }
  return abandoned;
}

} // namespace fabric::nccl_profiler
