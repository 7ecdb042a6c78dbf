#include "nccltest/cgroup_memory.h"

#include <charconv>

#include "common/atomic_file.h"
#include "common/strings.h"

namespace fabric::nccltest {
namespace {

// Files under /proc/self and a cgroup directory are small; these bounds only stop a
// runtime's odd file from taking the process's memory.
constexpr std::size_t kMaxMountinfoBytes = 4 << 20;
constexpr std::size_t kMaxCgroupFileBytes = 64 << 10;
// A cgroup path deeper than this is not followed up (real ones are a handful deep).
constexpr std::size_t kMaxCgroupDepth = 64;
// v1 writes "no limit" as LONG_MAX rounded down to a page; no machine has 2^60 bytes.
constexpr uint64_t kNoLimitFrom = uint64_t{1} << 60;

std::vector<std::string_view> split_cgroup_text(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool lists_cgroup_token(std::string_view list, std::string_view token) {
  for (std::string_view t : split_cgroup_text(list, ','))
    if (t == token) return true;
  return false;
}

// mountinfo escapes space, tab, newline and backslash in paths as \ooo.
std::string unescape_mount_path(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size()) {
      const std::string_view digits = text.substr(i + 1, 3);
      int value = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + 3, value, 8);
      if (ec == std::errc() && end == digits.data() + 3 && value < 256) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::optional<uint64_t> parse_cgroup_number(std::string_view text) {
  text = trim(text);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::string> read_cgroup_text(const std::string& path, std::size_t max_bytes) {
  Result<std::string> text = read_bounded_file(path, max_bytes);
  if (!text.ok()) return std::nullopt;
  return std::move(*text);
}

} // namespace

SelfCgroups parse_self_cgroups(std::string_view text) {
  SelfCgroups out;
  for (std::string_view line : split_cgroup_text(text, '\n')) {
    // hierarchy-ID:controller-list:cgroup-path; the path may itself hold ':'.
    const std::size_t first = line.find(':');
    if (first == std::string_view::npos) continue;
    const std::size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, first);
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::string_view path = line.substr(second + 1);
    if (path.empty() || path[0] != '/') continue;
    if (id == "0" && controllers.empty()) {
      if (!out.v2) out.v2 = std::string(path);
    } else if (lists_cgroup_token(controllers, "memory")) {
      if (!out.v1_memory) out.v1_memory = std::string(path);
    }
  }
  return out;
}

CgroupMounts parse_cgroup_mounts(std::string_view text) {
  CgroupMounts out;
  for (std::string_view line : split_cgroup_text(text, '\n')) {
    // id parent major:minor root mount-point options [optional fields...] - type source super
    std::vector<std::string_view> fields;
    for (std::string_view f : split_cgroup_text(line, ' '))
      if (!f.empty()) fields.push_back(f);
    std::size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-")
      ++dash;
    if (dash + 1 >= fields.size()) continue;
    const std::string_view type = fields[dash + 1];
    const std::string_view super = dash + 3 < fields.size() ? fields[dash + 3] : "";
    CgroupMount mount{unescape_mount_path(fields[3]), unescape_mount_path(fields[4])};
    if (mount.root.empty() || mount.root[0] != '/' || mount.mount_point.empty()) continue;
    if (type == "cgroup2") {
      if (!out.v2) out.v2 = std::move(mount);
    } else if (type == "cgroup" && lists_cgroup_token(super, "memory")) {
      if (!out.v1_memory) out.v1_memory = std::move(mount);
    }
  }
  return out;
}

std::optional<uint64_t> parse_cgroup_limit(std::string_view text) {
  if (trim(text) == "max") return std::nullopt;
  std::optional<uint64_t> value = parse_cgroup_number(text);
  if (!value || *value >= kNoLimitFrom) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_cgroup_usage(std::string_view text) {
  return parse_cgroup_number(text);
}

std::vector<std::string> cgroup_directories(const CgroupMount& mount, const std::string& path) {
  std::string root = mount.root;
  while (root.size() > 1 && root.back() == '/')
    root.pop_back();
  std::string relative;
  if (root == "/") {
    relative = path;
  } else if (path == root || path.rfind(root + "/", 0) == 0) {
    relative = path.substr(root.size());
  }
  std::vector<std::string> out;
  std::vector<std::string_view> parts;
  for (std::string_view part : split_cgroup_text(relative, '/')) {
    // ".." would climb out of the mount: such a path is not followed.
    if (part == "..") {
      parts.clear();
      break;
    }
    if (!part.empty() && part != ".") parts.push_back(part);
  }
  if (parts.size() > kMaxCgroupDepth) parts.clear();
  for (std::size_t n = parts.size(); n > 0; --n) {
    std::string dir = mount.mount_point;
    for (std::size_t i = 0; i < n; ++i)
      dir += "/" + std::string(parts[i]);
    out.push_back(dir);
  }
  out.push_back(mount.mount_point);
  return out;
}

std::optional<uint64_t> tightest_cgroup_room(const std::vector<std::string>& directories,
                                             std::string_view limit_file,
                                             std::string_view usage_file,
                                             const CgroupFileReader& read) {
  std::optional<uint64_t> room;
  for (const std::string& dir : directories) {
    const std::optional<std::string> limit_text = read(dir + "/" + std::string(limit_file));
    const std::optional<uint64_t> limit =
        limit_text ? parse_cgroup_limit(*limit_text) : std::nullopt;
    if (!limit) continue;
    const std::optional<std::string> usage_text = read(dir + "/" + std::string(usage_file));
    // A limit whose usage cannot be read still bounds the room by itself.
    const uint64_t usage = usage_text ? parse_cgroup_usage(*usage_text).value_or(0) : 0;
    const uint64_t left = *limit > usage ? *limit - usage : 0;
    if (!room || left < *room) room = left;
  }
  return room;
}

std::optional<uint64_t> cgroup_memory_room() {
  const std::optional<std::string> self = read_cgroup_text("/proc/self/cgroup", kMaxMountinfoBytes);
  const std::optional<std::string> mountinfo =
      read_cgroup_text("/proc/self/mountinfo", kMaxMountinfoBytes);
  if (!self || !mountinfo) return std::nullopt;
  const SelfCgroups where = parse_self_cgroups(*self);
  const CgroupMounts mounts = parse_cgroup_mounts(*mountinfo);
  const CgroupFileReader read = [](const std::string& path) {
    return read_cgroup_text(path, kMaxCgroupFileBytes);
  };
  std::optional<uint64_t> room;
  auto tighten = [&](std::optional<uint64_t> r) {
    if (r && (!room || *r < *room)) room = r;
  };
  if (where.v2 && mounts.v2) {
    tighten(tightest_cgroup_room(cgroup_directories(*mounts.v2, *where.v2), "memory.max",
                                 "memory.current", read));
  }
  if (where.v1_memory && mounts.v1_memory) {
    tighten(tightest_cgroup_room(cgroup_directories(*mounts.v1_memory, *where.v1_memory),
                                 "memory.limit_in_bytes", "memory.usage_in_bytes", read));
  }
  return room;
}

} // namespace fabric::nccltest
