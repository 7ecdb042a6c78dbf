// The file the plugin writes, one per process, and that the exporter reads: both sides of
// the format live here so that they cannot drift apart. The format is described for
// people in exporters/nccl_profiler/README.md ("File format").
//
// Text, one record per line, space-separated "key value" pairs:
//
//   fabric-nccl-profile 1
//   pid 4242
//   pid_ns 4026532198
//   start_ticks 3157
//   written_unix_ms 1732000000123
//   interval_ms 10000
//   sequence 17
//   abi ncclProfiler_v5
//   events_dropped 0
//   events_abandoned 0
//   comm 9f86d081884c7d65 nranks 16 rank 3 nnodes 2 timed_bytes 1258291200 busy_ns ...
//   cell all_reduce 1048576 ops 1200 bytes 1258291200 timed_ops 1200 ... busbw_gbps 25.53
//   end
//
// Every counter is cumulative over the process's life; "last_" fields cover the interval
// between the two most recent writes. A reader ignores keys it does not know (fields may
// be added within a version) and refuses a file of another version, a file without its
// "end" line, and anything over its limits. The communicator's own counters on its "comm"
// line were added within version 1: a file without them is whole, and says nothing of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "exporters/nccl_profiler/collectives.h"

namespace fabric::nccl_profiler {

inline constexpr int kProfileFormatVersion = 1;
inline constexpr std::string_view kProfileMagic = "fabric-nccl-profile";
// File names: "nccl-<pid_ns>-<pid>-<start_ticks>.prof". A pid is reused and every
// container has a pid 1, so the namespace and the start time make the name unique; a
// restarted process writes a new file and the old one ages out. Writers put their
// temporary files next to it under another suffix, which readers skip.
inline constexpr std::string_view kProfileFilePrefix = "nccl-";
inline constexpr std::string_view kProfileFileSuffix = ".prof";

struct ProfileCell {
  Collective collective = Collective::kOther;
  uint64_t size_bytes = 0; // the bucket's lower bound: 0 or a power of two
  uint64_t ops = 0;
  uint64_t bytes = 0;       // nccl-tests' message sizes, summed
  uint64_t timed_ops = 0;   // operations whose GPU time was measured
  uint64_t timed_bytes = 0; // their bytes
  uint64_t busy_ns = 0;     // their time, first channel's start to last channel's end
  uint64_t last_timed_bytes = 0;
  uint64_t last_busy_ns = 0;
};

// A communicator's time on the GPU in NCCL: the union of the intervals of all its timed
// operations, whatever their collective and size, so that a group of an all-reduce and an
// all-gather, or a send and a receive, counts the group's time once. Its bytes are the
// same operations' (the sum of its cells' timed_bytes).
struct CommBusy {
  uint64_t timed_bytes = 0;
  uint64_t busy_ns = 0;
  uint64_t last_timed_bytes = 0;
  uint64_t last_busy_ns = 0;
};

struct CommProfile {
  uint64_t hash = 0; // NCCL's commHash: the same on every rank of the communicator
  int nranks = 0;    // 0: not known (NCCL 2.23 to 2.26 do not tell a profiler)
  int rank = 0;
  int nnodes = 0;
  std::vector<ProfileCell> cells;
  std::optional<CommBusy> busy; // none in files of plugins that did not write it
};

struct ProcessProfile {
  int64_t pid = 0;          // in the process's own pid namespace
  uint64_t pid_ns = 0;      // inode of that namespace; 0 when unknown
  uint64_t start_ticks = 0; // /proc/PID/stat starttime
  int64_t written_unix_ms = 0;
  int64_t interval_ms = 0;
  uint64_t sequence = 0;
  std::string abi;
  uint64_t events_dropped = 0;   // events not counted: the event pool was full
  uint64_t events_abandoned = 0; // operations counted but never timed: NCCL never completed them
  std::vector<CommProfile> comms;
};

// The file's name for a process.
std::string profile_file_name(int64_t pid, uint64_t pid_ns, uint64_t start_ticks);

std::string render_profile(const ProcessProfile& profile);

// Each bound holds while parsing, before anything is kept for it: a file can make the
// parser hold at most max_comms communicators and max_cells cells (about 80 bytes each).
// The plugin writes at most 256 communicators of at most 9 x 64 cells, far less in
// practice: a job's communicators see a few collectives at a few sizes.
struct ParseLimits {
  std::size_t max_bytes = 4 << 20;
  std::size_t max_line = 1024;
  std::size_t max_comms = 512;
  std::size_t max_cells = 16384;
};
// interval_ms above this is refused: the plugin's flush interval is at most an hour.
inline constexpr int64_t kMaxIntervalMs = int64_t{3600} * 1000;
// A file from a shared directory: anything may be in it. `what` names it in errors.
Result<ProcessProfile> parse_profile(std::string_view text, std::string_view what,
                                     const ParseLimits& limits = {});

// algbw (bytes per second) of `bytes` moved in `ns`; none without time.
std::optional<double> algbw(uint64_t bytes, uint64_t ns);

} // namespace fabric::nccl_profiler
