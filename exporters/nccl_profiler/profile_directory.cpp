#include "exporters/nccl_profiler/profile_directory.h"

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <unistd.h>

#include "common/fd.h"
#include "exporters/nccl_profiler/profile_format.h"

namespace fabric::nccl_profiler {
namespace {

bool is_profile_name(std::string_view name) {
  return name.size() > kProfileFilePrefix.size() + kProfileFileSuffix.size() &&
         name.starts_with(kProfileFilePrefix) && name.ends_with(kProfileFileSuffix);
}

// "<profile name>.tmp.<pid>", as write_file_atomic names its temporary.
bool is_profile_temporary(std::string_view name) {
  std::size_t at = name.rfind(".tmp.");
  if (at == std::string_view::npos || at + 5 == name.size()) return false;
  std::string_view pid = name.substr(at + 5);
  return is_profile_name(name.substr(0, at)) &&
         std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Newest first: the heap's top is the oldest entry kept.
using Entry = std::pair<int64_t, std::string>; // clamped mtime in ns, name
bool newer(const Entry& a, const Entry& b) {
  return a > b;
}

// Adds `entry` to a heap of at most `max` entries; true when one was left out.
bool keep_newest(std::vector<Entry>& heap, Entry entry, std::size_t max) {
  heap.push_back(std::move(entry));
  std::push_heap(heap.begin(), heap.end(), newer);
  if (heap.size() <= max) return false;
  std::pop_heap(heap.begin(), heap.end(), newer);
  heap.pop_back();
  return true;
}

} // namespace

int64_t mtime_ns_of(const struct stat& st) {
  // Whatever time a tenant sets, between 1970 and 2096: differences of two such times in
  // nanoseconds stay far from overflowing.
  constexpr int64_t kMaxSeconds = 4'000'000'000;
  int64_t seconds = std::clamp<int64_t>(st.st_mtim.tv_sec, 0, kMaxSeconds);
  return seconds * 1000000000 + st.st_mtim.tv_nsec;
}

Result<ProfileListing> list_profile_directory(const std::string& dir, int64_t now_ns,
                                              const ListingLimits& limits) {
  ProfileListing listing;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) {
    if (errno == ENOENT) return listing;
    return Error::from_errno(errno, "opendir", dir);
  }
  // Per owner, never more than max_per_owner names held, and never more owners than
  // could each have one file listed: memory stays bounded however many entries there are.
  std::map<uint32_t, std::vector<Entry>> by_owner;
  while (dirent* entry = ::readdir(handle)) {
    std::string_view name(entry->d_name);
    bool profile = is_profile_name(name);
    if (!profile && !is_profile_temporary(name)) continue;
    struct stat st {};
    if (::fstatat(::dirfd(handle), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    int64_t mtime = std::min(mtime_ns_of(st), now_ns);
    if (!profile) {
      if (now_ns - mtime > limits.stale_ns && listing.stale_temporaries.size() < limits.max_files)
        listing.stale_temporaries.emplace_back(name);
      continue;
    }
    auto owner = by_owner.find(st.st_uid);
    if (owner == by_owner.end()) {
      if (by_owner.size() >= limits.max_files) {
        ++listing.over_limit;
        continue;
      }
      owner = by_owner.emplace(st.st_uid, std::vector<Entry>()).first;
    }
    if (keep_newest(owner->second, {mtime, std::string(name)}, limits.max_per_owner))
      ++listing.over_owner_limit;
  }
  ::closedir(handle);
  std::vector<std::pair<Entry, uint32_t>> all;
  for (auto& [owner, entries] : by_owner) {
    for (auto& entry : entries)
      all.emplace_back(std::move(entry), owner);
  }
  // The newest max_files over every owner.
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (all.size() > limits.max_files) {
    listing.over_limit += all.size() - limits.max_files;
    all.resize(limits.max_files);
  }
  for (auto& [entry, owner] : all)
    listing.profiles.push_back({std::move(entry.second), owner, entry.first});
  std::sort(listing.profiles.begin(), listing.profiles.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return listing;
}

Result<std::string> read_profile_file(const std::string& path, std::size_t max, struct stat& st,
                                      ReadRefusal& refusal) {
  refusal = ReadRefusal::kUnreadable;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) refusal = ReadRefusal::kGone;
    if (errno == ELOOP) refusal = ReadRefusal::kNotRegular;
    return Error::from_errno(errno, "open", path);
  }
  if (::fstat(fd.get(), &st) != 0) return Error::from_errno(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) {
    refusal = ReadRefusal::kNotRegular;
    return Error(ErrorCode::kDecode, path, "not a regular file");
  }
  refusal = ReadRefusal::kTooLarge;
  if (static_cast<uint64_t>(st.st_size) > max) {
    return Error(ErrorCode::kDecode, path, "larger than " + std::to_string(max) + " bytes");
  }
  // One byte more than the size: a file that grew meanwhile is seen to have.
  std::string content(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t filled = 0;
  while (filled < content.size()) {
    ssize_t n = ::read(fd.get(), content.data() + filled, content.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      refusal = ReadRefusal::kUnreadable;
      return Error::from_errno(errno, "read", path);
    }
    if (n == 0) break;
    filled += static_cast<std::size_t>(n);
  }
  if (filled > max) return Error(ErrorCode::kDecode, path, "grew past the size limit");
  content.resize(filled);
  refusal = ReadRefusal::kNone;
  return content;
}

} // namespace fabric::nccl_profiler
