#include "exporters/nccl_profiler/profile_reader.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd.h"

namespace fabric::nccl_profiler {
namespace {

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

std::string short_hash(uint64_t hash) {
  char buffer[9];
  std::snprintf(buffer, sizeof buffer, "%08" PRIx64, hash >> 32);
  return buffer;
}

bool is_profile_name(std::string_view name) {
  return name.size() > kProfileFilePrefix.size() + kProfileFileSuffix.size() &&
         name.starts_with(kProfileFilePrefix) && name.ends_with(kProfileFileSuffix);
}

// The profile names in `dir`, at most `max` of them: the most recently written, so that a
// directory filling up with the files of processes that exited long ago (nothing deletes
// them: the plugin cannot know when the exporter has read its last flush, and the
// exporter mounts the directory read-only) never hides a running process, whose file is
// rewritten every flush. Returned sorted by name. A missing directory has none.
Result<std::vector<std::string>> list_profiles(const std::string& dir, std::size_t max,
                                               std::size_t& over) {
  std::vector<std::string> names;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) {
    if (errno == ENOENT) return names;
    return Error::from_errno(errno, "opendir", dir);
  }
  // A heap whose top is the oldest entry kept: never more than `max` names held, however
  // many the directory has.
  using Entry = std::pair<int64_t, std::string>; // mtime in ns, name
  auto newer = [](const Entry& a, const Entry& b) { return a > b; };
  std::vector<Entry> kept;
  while (dirent* entry = ::readdir(handle)) {
    std::string_view name(entry->d_name);
    if (!is_profile_name(name)) continue;
    struct stat st {};
    int64_t mtime_ns = 0; // an entry that vanished meanwhile counts as the oldest
    if (::fstatat(::dirfd(handle), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    }
    kept.emplace_back(mtime_ns, std::string(name));
    std::push_heap(kept.begin(), kept.end(), newer);
    if (kept.size() > max) {
      std::pop_heap(kept.begin(), kept.end(), newer);
      kept.pop_back();
      ++over;
    }
  }
  ::closedir(handle);
  names.reserve(kept.size());
  for (auto& [mtime_ns, name] : kept)
    names.push_back(std::move(name));
  std::sort(names.begin(), names.end());
  return names;
}

// Reads a regular file of at most `max` bytes without following a link or blocking on a
// FIFO. Fills `st`; errors name what was refused.
Result<std::string> read_bounded(const std::string& path, std::size_t max, struct stat& st) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, "open", path);
  if (::fstat(fd.get(), &st) != 0) return Error::from_errno(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) return Error(ErrorCode::kDecode, path, "not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max) {
    return Error(ErrorCode::kDecode, path, "larger than " + std::to_string(max) + " bytes");
  }
  std::string content(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t filled = 0;
  while (filled < content.size()) {
    ssize_t n = ::read(fd.get(), content.data() + filled, content.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno(errno, "read", path);
    if (n == 0) break;
    filled += static_cast<std::size_t>(n);
  }
  if (filled > max) return Error(ErrorCode::kDecode, path, "grew past the size limit");
  content.resize(filled);
  return content;
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

} // namespace

ProfileReader::ProfileReader(ReaderOptions options)
    : options_(std::move(options)), locator_(options_.proc_root),
      pods_(options_.cni_state_dir, options_.pod_log_dir) {}

Result<Snapshot> ProfileReader::read() {
  return read(std::chrono::system_clock::now());
}

void ProfileReader::load(const std::string& name, uint64_t& budget) {
  FileState& file = files_[name];
  file.seen = true;
  std::string path = options_.dir + "/" + name;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    file.seen = false; // removed since the listing
    return;
  }
  // Unchanged since the last read (same inode, size and time, whatever it is): nothing to
  // read, parse or count again.
  if (st.st_dev == file.device && st.st_ino == file.inode &&
      static_cast<uint64_t>(st.st_size) == file.size && mtime_ns(st) == file.mtime_ns) {
    budget -= std::min<uint64_t>(budget, file.good ? file.size : 0);
    return;
  }
  file.device = st.st_dev;
  file.inode = st.st_ino;
  file.size = static_cast<uint64_t>(st.st_size);
  file.mtime_ns = mtime_ns(st);
  file.expired = false;
  auto content = read_bounded(path, std::min<uint64_t>(options_.limits.max_bytes, budget), st);
  if (!content.ok()) {
    if (content.error().sys_errno() == ENOENT) {
      file.seen = false; // removed between the listing and now
      return;
    }
    ++refused_total_;
    file.good.reset();
    return;
  }
  auto profile = parse_profile(*content, path, options_.limits);
  // The name is derived from the process's identity; a file whose content claims another
  // process is not believed.
  if (profile.ok() &&
      profile_file_name(profile->pid, profile->pid_ns, profile->start_ticks) != name) {
    profile = Error(ErrorCode::kDecode, path, "its content names another process");
  }
  if (!profile.ok()) {
    // The process's last good counters stay: they only ever grow.
    ++malformed_total_;
    return;
  }
  file.good = std::move(*profile);
  budget -= std::min<uint64_t>(budget, file.size);
}

void ProfileReader::resolve_pod(FileState& file, int64_t pid) {
  if (file.pod_settled) return;
  if (!file.pod_uid) {
    file.pod_uid = pod_uid_of_process(locator_.proc(), pid);
    if (!file.pod_uid) {
      file.pod_settled = true; // not in a pod
      return;
    }
  }
  file.pod = pods_.find(*file.pod_uid);
  file.pod_settled = file.pod.has_value();
}

void ProfileReader::contribute(const FileState& file, bool alive, Contributions& into) const {
  const ProcessProfile& profile = *file.good;
  for (const auto& comm : profile.comms) {
    SeriesLabels labels;
    labels.comm = short_hash(comm.hash);
    labels.nranks = comm.nranks;
    if (file.pod) {
      labels.pod_namespace = file.pod->pod_namespace;
      labels.pod_name = file.pod->pod_name;
    }
    for (const auto& cell : comm.cells) {
      labels.collective = std::string(collective_name(cell.collective));
      labels.size_bytes = cell.size_bytes;
      Contribution& c = into[labels];
      c.counters.operations = saturating_add(c.counters.operations, cell.ops);
      c.counters.bytes = saturating_add(c.counters.bytes, cell.bytes);
      c.counters.timed_operations = saturating_add(c.counters.timed_operations, cell.timed_ops);
      c.counters.timed_bytes = saturating_add(c.counters.timed_bytes, cell.timed_bytes);
      c.counters.busy_ns = saturating_add(c.counters.busy_ns, cell.busy_ns);
      if (alive) {
        c.last_timed_bytes = saturating_add(c.last_timed_bytes, cell.last_timed_bytes);
        c.last_busy_ns = saturating_add(c.last_busy_ns, cell.last_busy_ns);
      }
    }
  }
}

void ProfileReader::carry_over(const std::map<std::string, Contributions>& now) {
  static const Contribution kNone;
  for (const auto& [name, before] : previous_) {
    auto file = now.find(name);
    for (const auto& [labels, was] : before) {
      const Contribution* is = &kNone;
      if (file != now.end()) {
        auto it = file->second.find(labels);
        if (it != file->second.end()) is = &it->second;
      }
      // A contributor that went away, or whose counter went back, leaves what it had
      // counted with the series.
      Counters& carried = series_[labels].carried;
      auto keep = [](uint64_t& into, uint64_t was_value, uint64_t is_value) {
        if (is_value < was_value) into = saturating_add(into, was_value - is_value);
      };
      keep(carried.operations, was.counters.operations, is->counters.operations);
      keep(carried.bytes, was.counters.bytes, is->counters.bytes);
      keep(carried.timed_operations, was.counters.timed_operations, is->counters.timed_operations);
      keep(carried.timed_bytes, was.counters.timed_bytes, is->counters.timed_bytes);
      keep(carried.busy_ns, was.counters.busy_ns, is->counters.busy_ns);
    }
  }
}

std::vector<Series> ProfileReader::to_series(const std::map<std::string, Contributions>& now,
                                             ReaderStats& stats) {
  Contributions totals;
  for (const auto& [name, contributions] : now) {
    for (const auto& [labels, c] : contributions) {
      Contribution& t = totals[labels];
      t.counters.operations = saturating_add(t.counters.operations, c.counters.operations);
      t.counters.bytes = saturating_add(t.counters.bytes, c.counters.bytes);
      t.counters.timed_operations =
          saturating_add(t.counters.timed_operations, c.counters.timed_operations);
      t.counters.timed_bytes = saturating_add(t.counters.timed_bytes, c.counters.timed_bytes);
      t.counters.busy_ns = saturating_add(t.counters.busy_ns, c.counters.busy_ns);
      t.last_timed_bytes = saturating_add(t.last_timed_bytes, c.last_timed_bytes);
      t.last_busy_ns = saturating_add(t.last_busy_ns, c.last_busy_ns);
    }
  }
  // A series lives as long as one of its contributors does; its carry goes with it.
  std::erase_if(series_, [&](const auto& entry) { return !totals.contains(entry.first); });
  std::erase_if(served_, [&](const SeriesLabels& labels) { return !totals.contains(labels); });
  // Series already served keep their place; new ones fill what max_series leaves.
  for (const auto& [labels, total] : totals) {
    if (served_.size() >= options_.max_series) break;
    served_.insert(labels);
  }
  std::vector<Series> series;
  for (const auto& [labels, total] : totals) {
    if (!served_.contains(labels)) {
      ++stats.series_dropped;
      continue;
    }
    const Counters& carried = series_[labels].carried;
    SeriesValues v;
    v.operations = saturating_add(total.counters.operations, carried.operations);
    v.bytes = saturating_add(total.counters.bytes, carried.bytes);
    v.timed_operations = saturating_add(total.counters.timed_operations, carried.timed_operations);
    v.timed_bytes = saturating_add(total.counters.timed_bytes, carried.timed_bytes);
    v.busy_ns = saturating_add(total.counters.busy_ns, carried.busy_ns);
    v.algbw = algbw(total.last_timed_bytes, total.last_busy_ns);
    if (v.algbw) {
      auto collective = parse_collective_name(labels.collective);
      auto factor = collective ? bus_factor(*collective, labels.nranks) : std::nullopt;
      if (factor) v.busbw = *v.algbw * *factor;
    }
    series.push_back({labels, v});
  }
  return series;
}

Result<Snapshot> ProfileReader::read(std::chrono::system_clock::time_point now) {
  Snapshot snapshot;
  ReaderStats& stats = snapshot.stats;
  std::size_t over = 0;
  FABRIC_ASSIGN_OR_RETURN(auto names, list_profiles(options_.dir, options_.max_files, over));
  refused_total_ += over;
  stats.files = names.size();
  locator_.begin_read();
  pods_.begin_read();
  for (auto& [name, file] : files_)
    file.seen = false;
  uint64_t budget = options_.max_total_bytes;
  for (const auto& name : names)
    load(name, budget);
  std::erase_if(files_, [](const auto& entry) { return !entry.second.seen; });

  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  const int64_t retain_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.retain_exited).count();
  std::map<std::string, Contributions> contributions;
  for (auto& [name, file] : files_) {
    if (file.expired) ++stats.files_expired;
    if (!file.good) continue;
    const ProcessProfile& profile = *file.good;
    int64_t age_ns = now_ns - file.mtime_ns;
    Located located = locator_.locate({profile.pid, profile.pid_ns, profile.start_ticks});
    bool alive = located.presence == Presence::kAlive;
    if (located.presence == Presence::kUnknown) {
      alive =
          age_ns <= static_cast<int64_t>(options_.missed_flushes) * profile.interval_ms * 1000000;
    }
    if (!alive && age_ns > retain_ns) {
      // Forgotten until the file changes.
      ++stats.files_expired;
      file.expired = true;
      file.good.reset();
      continue;
    }
    if (located.presence == Presence::kAlive) resolve_pod(file, located.pid);
    ++(alive ? stats.processes_alive : stats.processes_exited);
    stats.events_dropped = saturating_add(stats.events_dropped, profile.events_dropped);
    stats.events_abandoned = saturating_add(stats.events_abandoned, profile.events_abandoned);
    contribute(file, alive, contributions[name]);
  }
  carry_over(contributions);
  previous_ = contributions;
  snapshot.series = to_series(contributions, stats);
  stats.files_malformed_total = malformed_total_;
  stats.files_refused_total = refused_total_;
  return snapshot;
}

} // namespace fabric::nccl_profiler
