#include "cni/locks.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fcntl.h>
#include <sys/file.h>
#include <thread>

#include "cni/names.h"
#include "common/atomic_file.h"

namespace fabric::cni {

Result<FileLock> FileLock::parent(const std::string& state_dir, const std::string& parent,
                                  std::chrono::milliseconds timeout) {
  // The parent is a netdev name from config, sysfs or a link's alias; check it like one
  // before it becomes part of a path.
  FABRIC_TRY(validate_interface_name(parent, "parent device").context("locking the parent"));
  std::string dir = state_dir + "/locks";
  return acquire(dir, dir + "/" + parent + ".lock", timeout).context("locking the parent");
}

Result<FileLock> FileLock::attachment(const std::string& state_dir, const std::string& digest,
                                      std::chrono::milliseconds timeout) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digest.data(), digest.data() + digest.size(), value, 16);
  if (digest.empty() || ec != std::errc() || end != digest.data() + digest.size()) {
    return Error(ErrorCode::kInvalidArgument, "locking the attachment",
                 "'" + digest + "' is not an attachment digest");
  }
  std::string dir = state_dir + "/locks/attachments";
  std::string path = dir + "/" + std::to_string(value % kAttachmentLockStripes) + ".lock";
  return acquire(dir, path, timeout).context("locking the attachment");
}

Result<FileLock> FileLock::acquire(const std::string& dir, const std::string& path,
                                   std::chrono::milliseconds timeout) {
  FABRIC_TRY(make_directories(dir, 0700).context("lock directory"));
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return Error::from_errno(errno, "open", path);

  // flock has no timeout of its own: try without blocking and back off, bounded by the
  // deadline. Holders keep the lock for milliseconds, so the first retries are short.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return FileLock(std::move(fd));
    if (errno != EWOULDBLOCK && errno != EINTR) return Error::from_errno(errno, "flock", path);
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error(ErrorCode::kTryAgain, path,
                   "another fabric-cni invocation has held it for more than " +
                       std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

} // namespace fabric::cni
