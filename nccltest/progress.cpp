#include "nccltest/progress.h"

namespace fabric::nccltest {

Beat Progress::begin(std::string what, std::string collective, std::size_t bytes, bool in_place) {
  Beat b;
  b.phase = ++phase_;
  b.what = std::move(what);
  b.collective = std::move(collective);
  b.bytes = bytes;
  b.in_place = in_place;
  send(b);
  return b;
}

void Progress::end(Beat beat) {
  beat.finished = true;
  send(beat);
}

void Progress::again(const Beat& beat) {
  send(beat);
}

void Progress::finished() {
  if (board_ != nullptr) board_->finished(rank_, WatchdogClock::now());
  if (client_ != nullptr) client_->finished();
}

void Progress::send(const Beat& beat) {
  if (board_ != nullptr) board_->beat(rank_, beat, WatchdogClock::now());
  if (client_ != nullptr) client_->beat(beat);
}

WatchdogMonitor::WatchdogMonitor(ProgressBoard& board, OnFire on_fire)
    : board_(board), on_fire_(std::move(on_fire)), thread_([this] { watch(); }) {}

WatchdogMonitor::~WatchdogMonitor() {
  stop();
}

void WatchdogMonitor::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void WatchdogMonitor::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    // The board changes without telling us; a tenth of a second is precise enough for a
    // timeout counted in seconds.
    stop_.wait_for(lock, std::chrono::milliseconds(100));
    if (stopping_) return;
    if (auto report = board_.check(WatchdogClock::now())) {
      lock.unlock();
      on_fire_(*report);
      return;
    }
  }
}

} // namespace fabric::nccltest
