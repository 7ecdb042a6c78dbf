#include "nccltest/abort_request.h"

namespace fabric::nccltest {

bool AbortRequest::post(int exit_code, const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (requested_.load(std::memory_order_relaxed)) return false;
  exit_code_ = exit_code;
  reason_ = reason;
  requested_.store(true, std::memory_order_release);
  return true;
}

int AbortRequest::exit_code() const {
  std::lock_guard lock(mutex_);
  return exit_code_;
}

std::string AbortRequest::reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

void AbortRequest::take_over() {
  {
    std::lock_guard lock(mutex_);
    taken_over_ = true;
  }
  taken_.notify_all();
}

bool AbortRequest::wait_for_owner(std::chrono::milliseconds grace) {
  std::unique_lock lock(mutex_);
  return taken_.wait_for(lock, grace, [this] { return taken_over_; });
}

} // namespace fabric::nccltest
