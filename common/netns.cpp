#include "common/netns.h"

#include <cerrno>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

namespace fabric::netns {

Result<UniqueFd> open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, "opening network namespace", path);
  struct statfs fs {};
  if (fstatfs(fd.get(), &fs) != 0) return Error::from_errno(errno, "fstatfs", path);
  // /proc/PID/ns/net is on nsfs; a path that is a plain file (say, an unmounted
  // /var/run/netns/NAME left behind) is not a namespace, and setns would fail obscurely.
  if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC &&
      static_cast<unsigned long>(fs.f_type) != PROC_SUPER_MAGIC) {
    return Error(ErrorCode::kInvalidArgument, "opening network namespace",
                 path + " is not a namespace file");
  }
  return fd;
}

Result<UniqueFd> open_current() {
  return open("/proc/thread-self/ns/net");
}

Result<bool> same(int fd_a, int fd_b) {
  struct stat a {
  }, b{};
  if (fstat(fd_a, &a) != 0) return Error::from_errno(errno, "fstat namespace");
  if (fstat(fd_b, &b) != 0) return Error::from_errno(errno, "fstat namespace");
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

Result<void> enter(int fd) {
  if (setns(fd, CLONE_NEWNET) != 0) return Error::from_errno(errno, "setns(CLONE_NEWNET)");
  return Ok();
}

} // namespace fabric::netns
