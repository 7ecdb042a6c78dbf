#include "cni/parent_lock.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>
#include <thread>

#include "cni/names.h"
#include "common/atomic_file.h"

namespace fabric::cni {

Result<ParentLock> ParentLock::acquire(const std::string& state_dir, const std::string& parent,
                                       std::chrono::milliseconds timeout) {
  // The parent is a netdev name from config or sysfs; check it like one before it becomes
  // part of a path.
  FABRIC_TRY(validate_interface_name(parent, "parent device").context("locking the parent"));
  std::string dir = state_dir + "/locks";
  FABRIC_TRY(make_directories(dir, 0700).context("lock directory"));
  std::string path = dir + "/" + parent + ".lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return Error::from_errno(errno, "open", path).with_context("locking the parent");

  // flock has no timeout of its own: try without blocking and back off, bounded by the
  // deadline. Holders keep the lock for milliseconds, so the first retries are short.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return ParentLock(std::move(fd));
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return Error::from_errno(errno, "flock", path).with_context("locking the parent");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error(ErrorCode::kTryAgain, "locking the parent",
                   "another fabric-cni invocation has held " + path + " for more than " +
                       std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

} // namespace fabric::cni
