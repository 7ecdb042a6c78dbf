#include "common/atomic_file.h"

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd.h"

namespace fabric {
namespace {

std::string directory_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Result<void> write_all(int fd, std::string_view content, const std::string& path) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno(errno, "write", path);
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return Ok();
}

} // namespace

Result<void> write_file_atomic(const std::string& path, std::string_view content, mode_t mode) {
  std::string dir = directory_of(path);
  // The temporary name is unique per process so that concurrent writers of one target
  // never share a temporary file; the last rename wins, whole.
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) return Error::from_errno(errno, "open", tmp);
  // open() applies the umask; the caller's mode is what the file must have.
  if (::fchmod(fd.get(), mode) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Error::from_errno(err, "fchmod", tmp);
  }
  auto written = write_all(fd.get(), content, tmp);
  if (written.ok() && ::fsync(fd.get()) != 0) written = Error::from_errno(errno, "fsync", tmp);
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Error::from_errno(err, "rename", tmp + " -> " + path);
  }
  // The rename is durable only once the directory entry is on disk.
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd) ::fsync(dir_fd.get());
  return Ok();
}

Result<std::string> read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, "open", path);
  std::string content;
  char buffer[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno(errno, "read", path);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
  }
  return content;
}

Result<std::string> read_bounded_file(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return Error::from_errno(errno, "open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::from_errno(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) {
    return Error(ErrorCode::kInvalidConfig, path, "is not a regular file");
  }
  std::string content;
  char buffer[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno(errno, "read", path);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
    if (content.size() > max_bytes) {
      return Error(ErrorCode::kInvalidConfig, path,
                   "is larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  return content;
}

Result<void> make_directories(const std::string& path, mode_t mode) {
  if (path.empty()) return Error(ErrorCode::kInvalidArgument, "make_directories", "empty path");
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST) {
      return Error::from_errno(errno, "mkdir", partial);
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::from_errno(errno, "stat", path);
  if (!S_ISDIR(st.st_mode)) {
    return Error(ErrorCode::kAlreadyExists, "make_directories", path + " is not a directory");
  }
  return Ok();
}

} // namespace fabric
