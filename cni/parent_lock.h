// Serializes the plugin's invocations on one parent device across processes.
//
// The runtime calls the plugin concurrently for different pods. Per-parent locking keeps
// two ADDs from claiming the same NIC in exclusive mode and keeps ADD/DEL of one parent's
// attachments (state files, device-info, GC) from interleaving, while pods on different
// parents proceed in parallel. flock() on <stateDir>/locks/<parent>.lock: the kernel drops
// the lock when the process dies, so a crashed plugin never leaves a stale lock behind.
#pragma once

#include <chrono>
#include <string>

#include "common/fd.h"
#include "common/result.h"

namespace fabric::cni {

class ParentLock {
public:
  // Waits up to `timeout` for the lock; past it the error is kTryAgain (CNI code 11), so
  // the runtime retries instead of failing the pod.
  static Result<ParentLock> acquire(const std::string& state_dir, const std::string& parent,
                                    std::chrono::milliseconds timeout);

  ParentLock(ParentLock&&) = default;
  ParentLock& operator=(ParentLock&&) = default;
  ~ParentLock() = default; // closing the fd releases the flock

private:
  explicit ParentLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

} // namespace fabric::cni
