#include "probes/rdma/rdma_clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace fabric::probes {
namespace {

// A read slower than this is not the vDSO.
constexpr int64_t kSlowReadNs = 250;

} // namespace

SampleClock::SampleClock() {
#if defined(__x86_64__)
  constexpr int kReads = 32;
  int64_t start = now_ns();
  for (int i = 0; i < kReads; ++i)
    (void)now_ns();
  use_tsc_ = (now_ns() - start) / (kReads + 1) > kSlowReadNs;
#endif
}

int64_t SampleClock::ticks() const {
#if defined(__x86_64__)
  if (use_tsc_) return static_cast<int64_t>(__rdtsc());
#endif
  return now_ns();
}

void SampleClock::begin() {
  mono_begin_ = now_ns();
  ticks_begin_ = ticks();
}

void SampleClock::end() {
  const int64_t ticks_end = ticks();
  const int64_t mono_end = now_ns();
  if (use_tsc_ && ticks_end > ticks_begin_) {
    ns_per_tick_ =
        static_cast<double>(mono_end - mono_begin_) / static_cast<double>(ticks_end - ticks_begin_);
  }
}

} // namespace fabric::probes
