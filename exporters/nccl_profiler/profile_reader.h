// The exporter's side of the plugin's files: reads the directory the plugins of a node
// write into and turns it into a bounded set of series, one per collective, communicator,
// size bucket and pod, whose counters never go backwards while the series exists.
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
};

struct SeriesLabels {
  std::string collective; // "all_reduce", ..., "send", "recv", "other"
  std::string comm;       // the communicator's hash, first 8 hex digits
  int nranks = 0;
  uint64_t size_bytes = 0;   // the size bucket's lower bound: 0 or a power of two
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
  // Since the reader was created:
  uint64_t files_malformed_total = 0; // a new content that did not parse
  uint64_t files_refused_total = 0;   // not a regular file, over a size limit, unreadable
};

struct Snapshot {
  std::vector<Series> series; // sorted by labels
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

  struct FileState {
    // What the file was when it was last read: a file that did not change is not parsed.
    uint64_t device = 0, inode = 0, size = 0;
    int64_t mtime_ns = 0;
    std::optional<ProcessProfile> good; // the last content that parsed
    bool expired = false;               // its process exited longer than retain_exited ago
    std::optional<std::string> pod_uid; // from the process's cgroup, once seen alive
    std::optional<PodRef> pod;
    bool pod_settled = false; // named, or known not to be in a pod
    bool seen = false;        // listed by the current read
  };
  struct SeriesState {
    Counters carried; // what contributors that went away had counted
  };

  void load(const std::string& name, uint64_t& budget);
  void resolve_pod(FileState& file, int64_t pid);
  void contribute(const FileState& file, bool alive, Contributions& into) const;
  void carry_over(const std::map<std::string, Contributions>& now);
  std::vector<Series> to_series(const std::map<std::string, Contributions>& now,
                                ReaderStats& stats);

  ReaderOptions options_;
  ProcessLocator locator_;
  PodDirectory pods_;
  std::map<std::string, FileState> files_;
  std::map<std::string, Contributions> previous_;
  std::map<SeriesLabels, SeriesState> series_;
  std::set<SeriesLabels> served_;
  uint64_t malformed_total_ = 0;
  uint64_t refused_total_ = 0;
};

} // namespace fabric::nccl_profiler
