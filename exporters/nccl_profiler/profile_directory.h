// The directory the plugins of a node write into, as the reader lists and reads it. Every
// pod that mounts it can write there, so what is listed is bounded before anything is
// read: per file owner (the one thing about an entry a tenant cannot choose, unless it is
// root in the node's user namespace) and in all, the newest first, with modification
// times clamped to now so that a future time cannot put junk ahead of a running job.
#pragma once

#include <cstdint>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "common/result.h"

namespace fabric::nccl_profiler {

struct ListedProfile {
  std::string name;
  uint32_t owner = 0;   // the entry's uid
  int64_t mtime_ns = 0; // clamped to the listing's now
};

struct ProfileListing {
  std::vector<ListedProfile> profiles; // sorted by name
  // Temporaries ("<profile name>.tmp.<pid>") older than the listing's `stale_ns`: their
  // writer died mid-write (a write takes milliseconds).
  std::vector<std::string> stale_temporaries;
  std::size_t over_owner_limit = 0; // profiles left out: their owner had max_per_owner
  std::size_t over_limit = 0;       // left out: max_files were listed already
};

struct ListingLimits {
  std::size_t max_files = 1024;
  std::size_t max_per_owner = 256;
  int64_t stale_ns = 60'000'000'000;
};

// A missing directory lists nothing; one that cannot be listed is an error.
Result<ProfileListing> list_profile_directory(const std::string& dir, int64_t now_ns,
                                              const ListingLimits& limits);

// Reads a regular file of at most `max` bytes without following a link or blocking on a
// FIFO, and fills `st` from the file opened. The error's text says what was refused.
enum class ReadRefusal { kNone, kNotRegular, kTooLarge, kUnreadable, kGone };
Result<std::string> read_profile_file(const std::string& path, std::size_t max, struct stat& st,
                                      ReadRefusal& refusal);

int64_t mtime_ns_of(const struct stat& st);

} // namespace fabric::nccl_profiler
