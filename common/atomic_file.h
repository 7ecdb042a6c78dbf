// Files that are either wholly old or wholly new: write a temporary file in the same
// directory, fsync it, rename() it over the target, fsync the directory. A crash or a
// full disk at any point leaves the previous content in place, never half a file.
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

#include "common/result.h"

namespace fabric {

// Replaces `path` with `content`, created with permission bits `mode` (e.g. 0600 for
// state that only root may read). The directory must exist.
Result<void> write_file_atomic(const std::string& path, std::string_view content,
                               mode_t mode = 0644);

// The whole content of a file; a missing file is kNotFound.
Result<std::string> read_file(const std::string& path);

// The content of a file that another program provides (a profile, a secret): it must be a
// regular file (a FIFO or a device is refused without blocking on it) of at most
// `max_bytes`; a larger one is kInvalidConfig naming the size limit.
Result<std::string> read_bounded_file(const std::string& path, std::size_t max_bytes);

// Creates `path` and its missing parents with `mode`; existing directories are left as
// they are.
Result<void> make_directories(const std::string& path, mode_t mode = 0755);

} // namespace fabric
