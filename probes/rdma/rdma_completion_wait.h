// Spin, then sleep: the data loops' wait for their next completion.
//
// A loop that polled its completion queues a while and found nothing asks for a
// completion event, polls once more (a completion that came before the request raises no
// event), and then sleeps on the completion channel until the next completion or its
// deadline. On a hardware NIC moving large messages the loop sleeps only while half a send
// queue of messages is still in flight (the NIC keeps going, and the wake-up costs a few
// microseconds of the tens that half a queue takes); with small messages completions come
// too fast for it to sleep at all. On soft-RoCE the device's work runs on the same CPUs as
// the probe, and a loop that spins there takes the CPU the device needs.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>

#include <infiniband/verbs.h>

#include "common/result.h"

namespace fabric::probes {

class CompletionWaiter {
public:
  // Empty polls before the loop goes to sleep: tens of microseconds on a host CPU.
  static constexpr uint32_t kSpinPolls = 1024;

  // `channel` is the one the loop's CQs report to; nullptr: always spin.
  explicit CompletionWaiter(ibv_comp_channel* channel) : channel_(channel) {}

  // After a poll that found nothing. Returns true when it slept (the caller looks at its
  // clocks then); `cqs` are the CQs the loop still waits on (nullptr entries are skipped);
  // `sleep_limit()` gives the longest sleep, and is called only before sleeping, so that
  // spinning reads no clock.
  template <typename SleepLimit>
  Result<bool> idle(std::initializer_list<ibv_cq*> cqs, SleepLimit&& sleep_limit) {
    if (channel_ == nullptr || spins_ < kSpinPolls) {
      ++spins_;
      return false;
    }
    if (!armed_) {
      FABRIC_TRY(arm(cqs));
      return false; // one more poll: a completion that came before arming raises no event
    }
    FABRIC_TRY(sleep(sleep_limit()));
    return true;
  }
  // After a poll that found a completion: back to spinning.
  void progressed() {
    spins_ = 0;
    armed_ = false;
  }

private:
  Result<void> arm(std::initializer_list<ibv_cq*> cqs);
  Result<void> sleep(std::chrono::milliseconds limit);

  ibv_comp_channel* channel_;
  uint32_t spins_ = 0;
  bool armed_ = false;
};

} // namespace fabric::probes
