#include "common/netns.h"

#include <cerrno>
#include <fcntl.h>
#include <optional>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <linux/nsfs.h>

namespace fabric::netns {

namespace {

// Why `fd` is not a network namespace; nullopt when it is. Namespace files live on nsfs
// (since Linux 3.19), and NS_GET_NSTYPE (4.11) tells a network namespace from the others.
std::optional<std::string> why_not_a_netns(int fd) {
  struct statfs fs {};
  if (fd < 0 || fstatfs(fd, &fs) != 0) return "is not an open file descriptor";
  if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC) return "is not a namespace file";
  int type = ::ioctl(fd, NS_GET_NSTYPE);
  if (type >= 0 && type != CLONE_NEWNET) return "is a namespace file, but not a network one";
  return std::nullopt;
}

} // namespace

Result<void> check_fd(int fd, const std::string& what) {
  if (auto why = why_not_a_netns(fd)) return Error(ErrorCode::kInvalidArgument, what, *why);
  return Ok();
}

Result<UniqueFd> open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, "opening network namespace", path);
  // A path that is a plain file (say, an unmounted /var/run/netns/NAME left behind) is not
  // a namespace, and setns would fail obscurely.
  if (auto why = why_not_a_netns(fd.get())) {
    return Error(ErrorCode::kInvalidArgument, "opening network namespace", path + " " + *why);
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
