// Reads sysfs (and procfs-style) attribute files under a root that tests can point at a
// fixture folder: SysfsReader("tests/data/sysfs-rxe").read("class/infiniband/rxe0/...").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace fabric {

class SysfsReader {
public:
  // `root` is the folder that stands for "/sys"; the default is the real one.
  explicit SysfsReader(std::string root = "/sys");

  const std::string& root() const { return root_; }
  std::string path(const std::string& relative) const;

  // The attribute's content with the trailing newline removed.
  Result<std::string> read(const std::string& relative) const;
  // Like read(), but a missing file is std::nullopt rather than an error.
  Result<std::optional<std::string>> read_optional(const std::string& relative) const;
  Result<uint64_t> read_u64(const std::string& relative) const;
  bool exists(const std::string& relative) const;
  // Names in a directory, sorted; a missing directory is an empty list.
  Result<std::vector<std::string>> list(const std::string& relative) const;
  // The final component of a symlink's target (sysfs links such as device/driver).
  Result<std::string> link_name(const std::string& relative) const;
  // Where `relative` really is, every symlink on the way followed, as a path relative to
  // the root: "class/infiniband/mlx5_0/device" ->
  // "devices/pci0000:00/0000:00:01.0/0000:01:00.0". sysfs's links are relative, so a
  // fixture folder resolves within itself; a link that leads outside the root (an
  // absolute one, or too many "..") is an error rather than a path on another tree.
  Result<std::string> resolve(const std::string& relative) const;

private:
  std::string root_;
};

} // namespace fabric
