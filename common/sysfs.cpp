#include "common/sysfs.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <system_error>

#include <filesystem>

namespace fabric {

namespace fs = std::filesystem;

SysfsReader::SysfsReader(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/')
    root_.pop_back();
}

std::string SysfsReader::path(const std::string& relative) const {
  return root_ + "/" + relative;
}

Result<std::optional<std::string>> SysfsReader::read_optional(const std::string& relative) const {
  std::string p = path(relative);
  std::ifstream in(p);
  if (!in) {
    int err = errno;
    if (err == ENOENT) return std::optional<std::string>();
    return Error::from_errno(err, "reading", p);
  }
  std::ostringstream content;
  content << in.rdbuf();
  // Some attributes (e.g. RDMA counters a driver does not implement) fail on read with
  // EINVAL/EOPNOTSUPP even though the file exists.
  if (in.bad()) return Error::from_errno(errno != 0 ? errno : EIO, "reading", p);
  std::string text = content.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0'))
    text.pop_back();
  return std::optional<std::string>(std::move(text));
}

Result<std::string> SysfsReader::read(const std::string& relative) const {
  FABRIC_ASSIGN_OR_RETURN(auto text, read_optional(relative));
  if (!text) return Error::from_errno(ENOENT, "reading", path(relative));
  return std::move(*text);
}

Result<uint64_t> SysfsReader::read_u64(const std::string& relative) const {
  FABRIC_ASSIGN_OR_RETURN(std::string text, read(relative));
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Error(ErrorCode::kDecode, "reading " + path(relative),
                 "expected an unsigned integer, found '" + text + "'");
  }
  return value;
}

bool SysfsReader::exists(const std::string& relative) const {
  std::error_code ec;
  return fs::exists(path(relative), ec);
}

Result<std::vector<std::string>> SysfsReader::list(const std::string& relative) const {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(path(relative), ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return names;
    return Error::from_errno(ec.value(), "listing", path(relative));
  }
  for (const auto& entry : it)
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> SysfsReader::link_name(const std::string& relative) const {
  std::error_code ec;
  fs::path target = fs::read_symlink(path(relative), ec);
  if (ec) return Error::from_errno(ec.value(), "reading link", path(relative));
  return target.filename().string();
}

Result<std::string> SysfsReader::resolve(const std::string& relative) const {
  std::error_code ec;
  const fs::path root = fs::canonical(root_, ec);
  if (ec) return Error::from_errno(ec.value(), "resolving", root_);
  const fs::path target = fs::canonical(path(relative), ec);
  if (ec) return Error::from_errno(ec.value(), "resolving", path(relative));
  const fs::path inside = target.lexically_relative(root);
  if (inside.empty() || *inside.begin() == "..") {
    return Error(ErrorCode::kInvalidArgument, "resolving " + path(relative),
                 "the link leads outside " + root_ + " (to " + target.string() + ")");
  }
  return inside.string();
}

} // namespace fabric
