#include "cni/sysctl.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include "common/fd.h"

namespace fabric::cni {
namespace {

constexpr const char* kRoot = "/proc/sys/";

// Keys come from configuration and interface names: keep them inside /proc/sys.
Result<std::string> sysctl_path(const std::string& key) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "sysctl key '" + key + "'", why);
  };
  if (key.empty()) return bad("must not be empty");
  if (key.front() == '/') return bad("must be relative to /proc/sys (net/ipv4/...)");
  std::size_t start = 0;
  while (start <= key.size()) {
    std::size_t end = key.find('/', start);
    if (end == std::string::npos) end = key.size();
    const std::string part = key.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return bad("has an empty, '.' or '..' component");
    }
    start = end + 1;
  }
  for (char c : key) {
    if (c == '\0' || c == ' ' || c == '\n' || c == '\t') return bad("contains whitespace or NUL");
  }
  return kRoot + key;
}

} // namespace

Result<void> write_sysctl(const std::string& key, const std::string& value) {
  FABRIC_ASSIGN_OR_RETURN(std::string path, sysctl_path(key));
  const std::string what = "setting sysctl " + key + " to " + value;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) {
    int err = errno;
    if (err == ENOENT) {
      return Error(ErrorCode::kNotFound, what,
                   "no such sysctl in this network namespace (" + path + ")")
          .with_hint("per-interface keys exist only for links of the calling thread's "
                     "namespace");
    }
    return Error::from_errno(err, what, "opening " + path);
  }
  // One write(): the kernel parses a sysctl per write call.
  ssize_t written = ::write(fd.get(), value.data(), value.size());
  if (written < 0) {
    int err = errno;
    if (err == EINVAL) {
      return Error::from_errno(err, what, "the kernel refused the value");
    }
    return Error::from_errno(err, what, "writing " + path);
  }
  if (static_cast<std::size_t>(written) != value.size()) {
    return Error(ErrorCode::kSystem, what, "short write to " + path);
  }
  return Ok();
}

Result<std::string> read_sysctl(const std::string& key) {
  FABRIC_ASSIGN_OR_RETURN(std::string path, sysctl_path(key));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    int err = errno;
    if (err == ENOENT) {
      return Error(ErrorCode::kNotFound, "reading sysctl " + key,
                   "no such sysctl in this network namespace (" + path + ")");
    }
    return Error::from_errno(err, "reading sysctl " + key, path);
  }
  std::string text;
  char buf[512];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) return Error::from_errno(errno, "reading sysctl " + key, path);
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

} // namespace fabric::cni
