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

int64_t saturating_product(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

constexpr std::array<std::string_view, kRefusalCount> kRefusalNames = {
    "malformed",  "not_regular", "too_large",      "unreadable",
    "over_limit", "over_budget", "owner_mismatch", "no_such_process"};

} // namespace

std::string_view refusal_name(Refusal refusal) {
  return kRefusalNames[static_cast<std::size_t>(refusal)];
}

ProfileReader::ProfileReader(ReaderOptions options)
    : options_(std::move(options)), locator_(options_.proc_root),
      pods_(options_.cni_state_dir, options_.pod_log_dir) {}

Result<Snapshot> ProfileReader::read() {
  return read(std::chrono::system_clock::now());
}

void ProfileReader::load(const ListedProfile& listed, std::map<uint32_t, uint64_t>& owner_budget,
                         uint64_t& budget) {
  FileState& file = files_[listed.name];
  file.seen = true;
  std::string path = options_.dir + "/" + listed.name;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    file.seen = false; // removed since the listing
    return;
  }
  auto [mine, fresh] = owner_budget.try_emplace(st.st_uid, options_.max_bytes_per_writer);
  uint64_t& left = mine->second;
  auto charge = [&](uint64_t bytes) {
    left -= std::min(left, bytes);
    budget -= std::min(budget, bytes);
  };
  // Unchanged since the last read (same inode, size and time, whatever it is): nothing to
  // read, parse or count again.
  if (st.st_dev == file.device && st.st_ino == file.inode &&
      static_cast<uint64_t>(st.st_size) == file.size && mtime_ns_of(st) == file.mtime_ns) {
    file.clamped_mtime_ns = std::min(file.clamped_mtime_ns, listed.mtime_ns);
    charge(file.good ? file.size : 0);
    return;
  }
  file.device = st.st_dev;
  file.inode = st.st_ino;
  file.size = static_cast<uint64_t>(st.st_size);
  file.mtime_ns = mtime_ns_of(st);
  file.clamped_mtime_ns = listed.mtime_ns;
  file.expired = false;
  file.pending.reset();
  // What this content may cost is known before a byte of it is read.
  uint64_t allowed = std::min<uint64_t>({options_.limits.max_bytes, budget, left});
  if (file.size > allowed && file.size <= options_.limits.max_bytes) {
    refuse(Refusal::kOverBudget);
    return;
  }
  ReadRefusal why = ReadRefusal::kNone;
  auto content = read_profile_file(path, allowed, st, why);
  if (!content.ok()) {
    if (why == ReadRefusal::kGone) {
      file.seen = false; // removed between the listing and now
      return;
    }
    refuse(why == ReadRefusal::kNotRegular ? Refusal::kNotRegular
           : why == ReadRefusal::kTooLarge ? Refusal::kTooLarge
                                           : Refusal::kUnreadable);
    file.good.reset();
    return;
  }
  charge(content->size());
  file.owner = st.st_uid;
  auto profile = parse_profile(*content, path, options_.limits);
  // The name is derived from the process's identity; a file whose content claims another
  // process is not believed.
  if (profile.ok() &&
      profile_file_name(profile->pid, profile->pid_ns, profile->start_ticks) != listed.name) {
    profile = Error(ErrorCode::kDecode, path, "its content names another process");
  }
  if (!profile.ok()) {
    // The process's last good counters stay: they only ever grow.
    refuse(Refusal::kMalformed);
    return;
  }
  file.claim = ProcessClaim{profile->pid, profile->pid_ns, profile->start_ticks};
  file.pending = std::move(*profile);
}

bool ProfileReader::bind(FileState& file, const Located& located) {
  if (!file.pending) return true;
  std::optional<ProcessProfile> pending = std::move(file.pending);
  file.pending.reset();
  switch (located.presence) {
  case Presence::kAlive:
    // Written by the process it names: the file is owned by the uid that process creates
    // files as. Another tenant's file under that name (a different uid) is not believed.
    if (locator_.file_owner(located.pid) != file.owner) {
      refuse(Refusal::kOwnerMismatch);
      return false;
    }
    file.bound_uid = file.owner;
    break;
  case Presence::kExited:
    // The process's last write, at its exit, is read after it is gone: believed if the
    // file was bound while the process ran and is still owned by the uid it wrote as.
    // Anything else for a process that is not running has nobody it could be bound to.
    if (file.bound_uid == file.owner) break;
    refuse(file.bound_uid ? Refusal::kOwnerMismatch : Refusal::kUnbound);
    return false;
  case Presence::kUnknown:
    // Out of this reader's sight (no hostPID): believed by its name, and served without
    // a pod. README.md, "The reader", says what this mode trusts.
    break;
  }
  file.good = std::move(pending);
  return true;
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
    if (comm.busy) {
      // The communicator's own series: no collective, no size.
      Contribution& c = into[labels];
      c.counters.timed_bytes = saturating_add(c.counters.timed_bytes, comm.busy->timed_bytes);
      c.counters.busy_ns = saturating_add(c.counters.busy_ns, comm.busy->busy_ns);
      if (alive) {
        c.last_timed_bytes = saturating_add(c.last_timed_bytes, comm.busy->last_timed_bytes);
        c.last_busy_ns = saturating_add(c.last_busy_ns, comm.busy->last_busy_ns);
      }
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

ProfileReader::WriterKey ProfileReader::writer_of(const FileState& file) const {
  if (file.pod_uid) return "pod:" + *file.pod_uid;
  return "uid:" + std::to_string(file.owner);
}

void ProfileReader::to_series(const std::map<std::string, Contributions>& now,
                              const std::map<std::string, WriterKey>& writers, Snapshot& snapshot) {
  Contributions totals;
  std::map<SeriesLabels, const WriterKey*> first_writer;
  for (const auto& [name, contributions] : now) {
    const WriterKey& writer = writers.at(name);
    for (const auto& [labels, c] : contributions) {
      first_writer.try_emplace(labels, &writer);
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
  std::erase_if(served_, [&](const auto& entry) { return !totals.contains(entry.first); });
  // Series already served keep their place; new ones fill what max_series leaves, each
  // writer (a pod, or a file owner outside pods) up to its share, so that a tenant that
  // comes first cannot take every place.
  std::map<WriterKey, std::size_t> share;
  for (const auto& [labels, writer] : served_)
    ++share[writer];
  for (const auto& [labels, total] : totals) {
    if (served_.size() >= options_.max_series) break;
    if (served_.contains(labels)) continue;
    const WriterKey& writer = *first_writer.at(labels);
    std::size_t& taken = share[writer];
    if (taken >= options_.max_series_per_writer) continue;
    ++taken;
    served_.emplace(labels, writer);
  }
  for (const auto& [labels, total] : totals) {
    if (!served_.contains(labels)) {
      ++snapshot.stats.series_dropped;
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
    (labels.collective.empty() ? snapshot.communicators : snapshot.series).push_back({labels, v});
  }
}

void ProfileReader::remove(const std::string& name) {
  if (!options_.remove_expired || removal_failed_) return;
  if (::unlink((options_.dir + "/" + name).c_str()) == 0) {
    ++removed_total_;
  } else if (errno != ENOENT) {
    removal_failed_ = errno == EROFS || errno == EACCES || errno == EPERM;
  }
}

Result<Snapshot> ProfileReader::read(std::chrono::system_clock::time_point now) {
  Snapshot snapshot;
  ReaderStats& stats = snapshot.stats;
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  ListingLimits limits{
      options_.max_files, options_.max_files_per_writer,
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.stale_temporary).count()};
  FABRIC_ASSIGN_OR_RETURN(auto listing, list_profile_directory(options_.dir, now_ns, limits));
  refused_[static_cast<std::size_t>(Refusal::kOverFileLimit)] +=
      listing.over_limit + listing.over_owner_limit;
  for (const auto& name : listing.stale_temporaries)
    remove(name);
  stats.files = listing.profiles.size();
  locator_.begin_read();
  pods_.begin_read();
  for (auto& [name, file] : files_)
    file.seen = false;
  uint64_t budget = options_.max_total_bytes;
  std::map<uint32_t, uint64_t> owner_budget;
  for (const auto& listed : listing.profiles)
    load(listed, owner_budget, budget);
  std::erase_if(files_, [](const auto& entry) { return !entry.second.seen; });

  const int64_t retain_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.retain_exited).count();
  std::map<std::string, Contributions> contributions;
  std::map<std::string, WriterKey> writers;
  std::vector<std::string> to_remove;
  for (auto& [name, file] : files_) {
    if (file.expired) ++stats.files_expired;
    if (!file.claim) continue;
    Located located = locator_.locate(*file.claim);
    bind(file, located);
    // A modification time in the future is now: it cannot keep a file young.
    int64_t age_ns = now_ns - std::min(file.clamped_mtime_ns, now_ns);
    if (!file.good) {
      // Never bound to a running process (it exited before this reader saw it, or never
      // was): nothing is served from it, and it goes as an exited process's file would.
      if (located.presence == Presence::kExited && age_ns > retain_ns) to_remove.push_back(name);
      continue;
    }
    const ProcessProfile& profile = *file.good;
    bool alive = located.presence == Presence::kAlive;
    if (located.presence == Presence::kUnknown) {
      alive = age_ns <=
              saturating_product(saturating_product(options_.missed_flushes, profile.interval_ms),
                                 1000000);
    }
    if (!alive && age_ns > retain_ns) {
      // Forgotten until the file changes, and removed where the directory allows it.
      ++stats.files_expired;
      file.expired = true;
      file.good.reset();
      to_remove.push_back(name);
      continue;
    }
    if (located.presence == Presence::kAlive) resolve_pod(file, located.pid);
    ++(alive ? stats.processes_alive : stats.processes_exited);
    stats.events_dropped = saturating_add(stats.events_dropped, profile.events_dropped);
    stats.events_abandoned = saturating_add(stats.events_abandoned, profile.events_abandoned);
    contribute(file, alive, contributions[name]);
    writers[name] = writer_of(file);
  }
  for (const auto& name : to_remove)
    remove(name);
  carry_over(contributions);
  previous_ = contributions;
  to_series(contributions, writers, snapshot);
  stats.refused = refused_;
  stats.files_malformed_total = refused_[static_cast<std::size_t>(Refusal::kMalformed)];
  for (std::size_t i = 0; i < kRefusalCount; ++i) {
    if (i != static_cast<std::size_t>(Refusal::kMalformed))
      stats.files_refused_total += refused_[i];
  }
  stats.files_removed_total = removed_total_;
  return snapshot;
}

} // namespace fabric::nccl_profiler
