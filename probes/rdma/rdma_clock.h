// The probes' clock: CLOCK_MONOTONIC_RAW, which no NTP adjustment slews and which needs no
// CPU frequency (perftest's cycle counter does, and warns when it cannot tell it).
#pragma once

#include <time.h>

#include <cstdint>

namespace fabric::probes {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Timestamps for a latency loop, one per iteration.
//
// With a TSC clocksource, CLOCK_MONOTONIC_RAW is read through the vDSO in a few tens of
// nanoseconds and is used directly. With another clocksource (hpet, acpi_pm: emulated
// machines) every read is a system call and a device access, about 1.5 us under QEMU,
// which would add itself to every round trip. There, samples are taken with the CPU's
// timestamp counter and converted with the rate measured against CLOCK_MONOTONIC_RAW over
// the run itself: the time base stays CLOCK_MONOTONIC_RAW and no CPU frequency is assumed.
class SampleClock {
public:
  SampleClock();

  // Starts and ends the measured span (two CLOCK_MONOTONIC_RAW reads).
  void begin();
  void end();

  // A raw timestamp; differences are converted with ns_per_tick() after end().
  int64_t ticks() const;
  double ns_per_tick() const { return ns_per_tick_; }

private:
  bool use_tsc_ = false;
  int64_t mono_begin_ = 0;
  int64_t ticks_begin_ = 0;
  double ns_per_tick_ = 1.0;
};

} // namespace fabric::probes
