// Progress beats from the run to the watchdog, and the watchdog's monitor on rank 0.
//
// Each rank numbers its phases the same way (Progress::begin hands out the numbers), so
// rank 0 can tell who is behind. Rank 0's own beats go straight to its board; the other
// ranks' travel over the control channel. Without a watchdog (-T 0) beats go nowhere.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "nccltest/control_channel.h"
#include "nccltest/watchdog.h"

namespace fabric::nccltest {

class Progress {
public:
  Progress() = default;
  void attach_board(ProgressBoard* board, int rank) {
    board_ = board;
    rank_ = rank;
  }
  void attach_client(ControlClient* client) { client_ = client; }
  bool active() const { return board_ != nullptr || client_ != nullptr; }

  // Enters the next phase; returns it so that end() can close it.
  Beat begin(std::string what, std::string collective = "", std::size_t bytes = 0,
             bool in_place = false);
  void end(Beat beat);
  // Still inside `beat`'s phase and making progress (a chunk of a long check done): the
  // watchdog's clock for this rank starts again.
  void again(const Beat& beat);
  // This rank is done: it no longer counts as unfinished.
  void finished();

private:
  void send(const Beat& beat);
  ProgressBoard* board_ = nullptr;
  ControlClient* client_ = nullptr;
  int rank_ = 0;
  uint64_t phase_ = 0;
};

// Looks at the board a few times a second and calls `on_fire` once, from its own thread,
// when the watchdog must fire.
class WatchdogMonitor {
public:
  using OnFire = std::function<void(const HangReport&)>;
  WatchdogMonitor(ProgressBoard& board, OnFire on_fire);
  ~WatchdogMonitor();
  WatchdogMonitor(const WatchdogMonitor&) = delete;
  WatchdogMonitor& operator=(const WatchdogMonitor&) = delete;
  void stop();

private:
  void watch();
  ProgressBoard& board_;
  OnFire on_fire_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace fabric::nccltest
