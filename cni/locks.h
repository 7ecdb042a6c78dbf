// Serializes the plugin's invocations across processes, with two kinds of lock.
//
// The runtime calls the plugin concurrently for different pods, and may call DEL for an
// attachment while its ADD still runs (an ADD past the runtime's deadline is abandoned,
// not waited for). Two locks keep each decision on state consistent with what it acts on:
//   - the attachment lock (container ID + ifname): ADD, DEL and GC of one attachment
//     serialize, whatever they believe the parent to be. DEL can know the parent only
//     from the state record or the devices, both of which a concurrent ADD is changing;
//     this lock is taken first, before either is read.
//   - the parent lock: two ADDs cannot claim the same NIC in exclusive mode, and the
//     attachments of one parent (state files, device-info, passthru macvlans) change one
//     at a time, while pods on different parents proceed in parallel.
// Always in that order, attachment then parent, so they cannot deadlock.
//
// flock() on files under <stateDir>/locks: the kernel drops the lock when the process
// dies, so a crashed or killed plugin never leaves a stale lock behind. Attachments share
// kAttachmentLockStripes lock files (by digest), so the folder does not grow with every
// pod ever attached.
#pragma once

#include <chrono>
#include <string>

#include "common/fd.h"
#include "common/result.h"

namespace fabric::cni {

inline constexpr unsigned kAttachmentLockStripes = 64;

class FileLock {
public:
  // The lock of parent netdev `parent`: <stateDir>/locks/<parent>.lock.
  static Result<FileLock> parent(const std::string& state_dir, const std::string& parent,
                                 std::chrono::milliseconds timeout);
  // The lock of the attachment whose attachment_digest() is `digest` (link_mark.h):
  // <stateDir>/locks/attachments/<stripe>.lock.
  static Result<FileLock> attachment(const std::string& state_dir, const std::string& digest,
                                     std::chrono::milliseconds timeout);

  FileLock(FileLock&&) = default;
  FileLock& operator=(FileLock&&) = default;
  ~FileLock() = default; // closing the fd releases the flock

private:
  // Waits up to `timeout`; past it the error is kTryAgain (CNI code 11), so the runtime
  // retries instead of failing the pod.
  static Result<FileLock> acquire(const std::string& dir, const std::string& path,
                                  std::chrono::milliseconds timeout);
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

} // namespace fabric::cni
