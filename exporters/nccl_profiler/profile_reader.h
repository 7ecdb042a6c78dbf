// The exporter's side of the plugin's files: reads the directory the plugins of a node
// write into and turns it into a bounded set of series, one per collective, communicator,
// size bucket and pod, and one per communicator and pod for the communicator's own time,
// whose counters never go backwards while the series exists.
//
// The directory is shared with every pod that mounts it, so each file is hostile: a
// bounded number of names is listed, each file is opened without following links, must
// be a regular file under a size limit, and is parsed with limits; a malformed file is
// counted and skipped (its last good content is kept while its process lives).
//
// Typical use (one reader per exporter, read() once per scrape, from one thread):
//   ProfileReader reader({.dir = "/run/fabric/nccl"});
//   auto snapshot = reader.read();
//   for (const auto& s : snapshot->series) ... s.labels.collective, s.values.bytes ...
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "exporters/nccl_profiler/plugin_config.h"
#include "exporters/nccl_profiler/pod_resolver.h"
#include "exporters/nccl_profiler/process_locator.h"
#include "exporters/nccl_profiler/profile_directory.h"
#include "exporters/nccl_profiler/profile_format.h"

namespace fabric::nccl_profiler {

struct ReaderOptions {
  std::string dir = kDefaultDir;
  std::string proc_root = "/proc";
  std::string cni_state_dir = "/var/lib/cni/fabric"; // empty: not consulted
  std::string pod_log_dir = "/var/log/pods";         // empty: not consulted
  // How long the last counters of a process that has exited are still served, counted
  // from its file's last write, so that Prometheus scrapes its final values.
  std::chrono::seconds retain_exited{300};
  // For a process this reader cannot see (another pid namespace, without hostPID): it is
  // taken as exited once its file has missed this many of its flush intervals.
  int missed_flushes = 3;
  std::size_t max_files = 1024;
  std::size_t max_total_bytes = 64 << 20;
  ParseLimits limits;
  std::size_t max_series = 10000;
  // Shares of one writer, so that no tenant can use up what the others need: files
  // listed and bytes read per file owner, series per pod (per file owner outside a pod).
  std::size_t max_files_per_writer = 256;
  std::size_t max_bytes_per_writer = 8 << 20;
  std::size_t max_series_per_writer = 2500;
  // Removes the files of exited processes once they are no longer served, and the
  // temporaries of writers killed mid-write older than this (the directory is on /run
  // and only emptied at boot). Needs the directory writable; read-only, nothing is removed.
  bool remove_expired = true;
  std::chrono::seconds stale_temporary{60};
};

// Why a file, or a new content of it, was not used; the values label a self-metric.
enum class Refusal {
  kMalformed,     // does not parse, or names another process than its file name
  kNotRegular,    // a link, a FIFO, a directory
  kTooLarge,      // over limits.max_bytes
  kUnreadable,    // open or read failed
  kOverFileLimit, // left out of the listing: max_files, or its owner's max_files_per_writer
  kOverBudget,    // over max_total_bytes, or its owner's max_bytes_per_writer
  kOwnerMismatch, // its owner is not the uid of the process it claims
  kUnbound,       // claims a process this reader sees is not running
};
inline constexpr std::size_t kRefusalCount = 8;
std::string_view refusal_name(Refusal refusal);

struct SeriesLabels {
  // "all_reduce", ..., "send", "recv", "other"; empty in a communicator's series
  // (Snapshot::communicators), which covers all its operations.
  std::string collective;
  std::string comm; // the communicator's hash, first 8 hex digits
  int nranks = 0;
  uint64_t size_bytes = 0;   // the size bucket's lower bound: 0 or a power of two; 0 for a
                             // communicator's series
  std::string pod_namespace; // empty outside a pod, or when the pod cannot be named
  std::string pod_name;
  auto operator<=>(const SeriesLabels&) const = default;
};

struct SeriesValues {
  uint64_t operations = 0;
  uint64_t bytes = 0;
  uint64_t timed_operations = 0;
  uint64_t timed_bytes = 0;
  uint64_t busy_ns = 0;
  // Over the processes' last flush intervals; none when no live process of the series
  // timed an operation in its last interval. Bytes per second.
  std::optional<double> algbw;
  std::optional<double> busbw;
};

struct Series {
  SeriesLabels labels;
  SeriesValues values;
};

struct ReaderStats {
  std::size_t files = 0;            // profile files in the directory, within max_files
  std::size_t processes_alive = 0;  // files served whose process runs (or is out of sight)
  std::size_t processes_exited = 0; // files served whose process has exited
  std::size_t files_expired = 0;    // files of exited processes past retain_exited
  std::size_t series_dropped = 0;   // series over max_series, not served this time
  uint64_t events_dropped = 0;      // summed over the files served
  uint64_t events_abandoned = 0;
  // Since the reader was created, each refused content counted once:
  std::array<uint64_t, kRefusalCount> refused{}; // by Refusal
  uint64_t files_malformed_total = 0;            // refused[kMalformed]
  uint64_t files_refused_total = 0;              // every other reason
  uint64_t files_removed_total = 0;              // expired profiles and stale temporaries
};

struct Snapshot {
  std::vector<Series> series; // sorted by labels
  // Per communicator and pod, from the processes whose plugin writes the communicator's
  // own time (CommBusy): timed_bytes, busy_ns (the union over all its operations, summed
  // over its ranks in those processes) and algbw; the other values are 0. Each takes a
  // place in max_series and in its writer's share, as a series does; having no collective,
  // they sort first, so where places run out a communicator's whole is served before its
  // cells.
  std::vector<Series> communicators;
  ReaderStats stats;
};

class ProfileReader {
public:
  explicit ProfileReader(ReaderOptions options);

  // A missing directory is an empty snapshot (no job has run yet); a directory that
  // cannot be listed is an error.
  Result<Snapshot> read();
  Result<Snapshot> read(std::chrono::system_clock::time_point now);

private:
  struct Counters {
    uint64_t operations = 0, bytes = 0, timed_operations = 0, timed_bytes = 0, busy_ns = 0;
  };
  struct Contribution {
    Counters counters;
    uint64_t last_timed_bytes = 0;
    uint64_t last_busy_ns = 0;
  };
  using Contributions = std::map<SeriesLabels, Contribution>;
  // Who a file's data belongs to, for the shares: its pod's UID, or its owner's uid.
  using WriterKey = std::string;

  struct FileState {
    // What the file was when it was last read: a file that did not change is not parsed.
    uint64_t device = 0, inode = 0, size = 0;
    int64_t mtime_ns = 0; // as the file says; `clamped_mtime_ns` no later than the read
    int64_t clamped_mtime_ns = 0;
    uint32_t owner = 0;
    // The uid its process creates files as, once a content was bound to it while it ran.
    std::optional<uint32_t> bound_uid;
    std::optional<ProcessClaim> claim;     // the process its name and content name
    std::optional<ProcessProfile> pending; // a new content, not yet bound to its process
    std::optional<ProcessProfile> good;    // the last content bound to its process
    bool expired = false;                  // its process exited longer than retain_exited ago
    std::optional<std::string> pod_uid;    // from the process's cgroup, once seen alive
    std::optional<PodRef> pod;
    bool pod_settled = false; // named, or known not to be in a pod
    bool seen = false;        // listed by the current read
  };
  struct SeriesState {
    Counters carried; // what contributors that went away had counted
  };

  void load(const ListedProfile& listed, std::map<uint32_t, uint64_t>& owner_budget,
            uint64_t& budget);
  void refuse(Refusal why) { ++refused_[static_cast<std::size_t>(why)]; }
  bool bind(FileState& file, const Located& located);
  void resolve_pod(FileState& file, int64_t pid);
  WriterKey writer_of(const FileState& file) const;
  void contribute(const FileState& file, bool alive, Contributions& into) const;
  void carry_over(const std::map<std::string, Contributions>& now);
  void to_series(const std::map<std::string, Contributions>& now,
                 const std::map<std::string, WriterKey>& writers, Snapshot& snapshot);
  void remove(const std::string& name);

  ReaderOptions options_;
  ProcessLocator locator_;
  PodDirectory pods_;
  std::map<std::string, FileState> files_;
  std::map<std::string, Contributions> previous_;
  std::map<SeriesLabels, SeriesState> series_;
  std::map<SeriesLabels, WriterKey> served_; // and the writer whose share it takes
  std::array<uint64_t, kRefusalCount> refused_{};
  uint64_t removed_total_ = 0;
  bool removal_failed_ = false; // a read-only directory: not tried again
};

} // namespace fabric::nccl_profiler
