// fabric-nccltest's options: nccl-tests' short options for what both tools have (-b -e -f
// -i -n -w -c -o -d -r -a -G -T -J -z, and -g/-t/-m where only their defaults make sense
// here), long forms, and fabric-nccltest's own. Every option is validated before any rank
// allocates memory, in three steps as the facts become known: the options alone, then
// against the backend, then against the ranks and the nodes' memory. Errors name the
// option and the value.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/result.h"
#include "libs/pair_schedules/mesh_patterns.h"
#include "nccltest/collectives.h"
#include "nccltest/sizes.h"

namespace fabric::nccltest {

enum class PairsBy { kHost, kRank };

struct Options {
  Collective collective = Collective::kAllReduce;
  std::optional<BackendKind> backend; // nullopt: nccl when a CUDA device is visible, else mpi
  SizeSweep sweep;
  int iters = 20;
  int warmup_iters = 1; // nccl-tests' default
  int agg_iters = 1;
  int check_iters = 1; // -c: checked repetitions per size; 0: no check (N/A)
  std::vector<DataType> types{DataType::kFloat};
  bool all_types = false; // -d all: every type the backend has
  std::vector<ReduceOp> ops{ReduceOp::kSum};
  bool all_ops = false;   // -o all
  int root = 0;           // -1: every rank in turn (-r -1)
  int average = 1;        // -a: 0 rank 0, 1 mean, 2 min, 3 max over ranks
  int graph_launches = 0; // -G (nccl backend)
  // -z: 0 none; 1 wait and barrier after each operation; 2 wait after each, no barrier;
  // 3 wait and barrier after each iteration of -m operations, the barrier not timed.
  int blocking = 0;
  // -g, -t: GPUs per thread and threads per process, as nccl-tests runs them (nccl backend:
  // one rank per GPU, ngpus * nthreads per process); -R: buffer registration 0/1/2.
  int ngpus = 1, nthreads = 1, registration = 0;
  int run_cycles = 1;             // -N: sweeps of the sizes; 0: until stopped
  bool parallel_init = false;     // -p: printed as nccl-tests does; one thread per rank here
  bool report_cputime = false;    // -C: the host's time to issue the operations
  bool report_timestamps = false; // -S: a timestamp at the end of each row
  int unalign = 0;                // -u: buffers start this many elements off alignment
  bool stream_null = false;       // -y: the nccl backend runs on CUDA's default stream
  int cta_policy = -1;            // -x: NCCL's CTAPolicy (nccl backend); -1: NCCL's default
  bool memory_report = false;     // -M 1: GPU memory taken, after the footer (nccl backend)
  bool per_iteration = false;     // -I 1: every iteration timed, summarised per placement
  int per_iteration_skip = 0;     // -K: leading iterations left out of that summary
  // Flags that mean nothing on the chosen backend, one line each for the header
  // (validate_for_backend fills it).
  std::vector<std::string> notes;
  // Type and operation pairs of -d/-o that this run leaves out (restrict_one_rank_fp8).
  std::vector<std::pair<DataType, ReduceOp>> left_out;
  bool leaves_out(DataType t, ReduceOp op) const;
  double timeout_s = 0; // -T: watchdog, per phase; 0: off
  std::optional<std::string> json_path, prom_path, plot_path;
  std::optional<double> min_busbw;     // GB/s
  std::optional<double> min_busbw_pct; // % of the line-rate ceiling
  bool pairs = false;
  PairsBy pairs_by = PairsBy::kHost;
  std::optional<std::size_t> pairs_bytes; // default: -e
  std::optional<std::string> pairs_heatmap;
  probes::PatternSpec pairs_pattern; // default: all pairs
  bool require_rdma = false;
  std::optional<std::string> nic; // the NIC whose speed bounds busbw, instead of guessing
  double rendezvous_timeout_s = 300;
  std::vector<std::string> args; // the command line, for the JSON report
};

// Options as typed, before conversion (CLI11 binds to these).
struct RawOptions {
  std::string program;    // argv[0]: all_reduce_perf and the like pick the collective
  std::string collective; // --collective; empty: the program's, else all_reduce
  std::string backend = "auto";
  std::string min_bytes = "33554432", max_bytes = "33554432", step_bytes = "1048576";
  std::string step_factor = "1";
  int iters = 20, warmup_iters = 1, agg_iters = 1, check_iters = 1;
  std::string datatype = "float", op = "sum";
  int root = 0, average = 1, graph_launches = 0, blocking = 0;
  int ngpus = 1, nthreads = 1, registration = 0;
  // nccl-tests' remaining flags (-N -p -y -C -S -x -D -V -M -u -I -K), as its getopt
  // takes them: each with a value.
  int run_cycles = 1, parallel_init = 0, stream_null = 0, report_cputime = 0;
  int report_timestamps = 0, cta_policy = -1, device_impl = 0;
  int device_cta_count = 16, memory_report = 0, unalign = 0, per_iter_timing = 0;
  int per_iter_skip = 0;
  double timeout_s = 0;
  std::string json_path, prom_path, plot_path, pairs_heatmap;
  std::optional<double> min_busbw, min_busbw_pct;
  bool pairs = false;
  std::string pairs_by = "host", pairs_size, pairs_pattern;
  bool require_rdma = false;
  std::string nic;
  double rendezvous_timeout_s = 300;
};

void add_options(CLI::App& app, RawOptions& raw);

// Converts and checks what needs no other fact.
Result<Options> validate_options(const RawOptions& raw, std::vector<std::string> args);

// That every output file (-J, --prom, --plot, --pairs-heatmap) can be written: its folder
// exists and takes new files, and it is not a folder. Rank 0, which writes them, calls
// this before any rank allocates, so a typo costs nothing instead of a whole sweep.
Result<void> check_output_paths(const Options& options);

// What the chosen backend can run: a type or an operation it lacks names both; -G needs
// NCCL. Expands "-d all" and "-o all" to what the backend has.
Result<void> validate_for_backend(Options& options, BackendKind backend);

// fp8 (f8e4m3, f8e5m2) where nccl-tests runs it: NCCL 2.24 or newer (`nccl_version` as
// ncclGetVersion gives it) and every GPU of the run a Hopper or newer (compute capability
// 90, the smallest of every rank's). "-d all" leaves fp8 out elsewhere, as nccl-tests does;
// a type named with -d is refused there, naming what is missing.
Result<void> restrict_fp8(Options& options, int nccl_version, int min_compute_capability);

// NCCL refuses avg and mulsum on fp8 where a communicator has one rank: it runs such a
// communicator's reductions through ncclLaunchOneRank, whose host code offers the fp8
// kernels only under `__CUDA_ARCH__ >= 900`, never true in host code, so the call returns
// ncclInvalidArgument on every GPU (NCCL 2.24, which brought fp8, to 2.29 at least; seen on
// an H200 with NCCL 2.28.9). `smallest_comm_ranks`: the fewest ranks of any communicator of
// the run. Those pairs are left out with a header note; a run of nothing else is refused.
Result<void> restrict_one_rank_fp8(Options& options, int smallest_comm_ranks);

// What each node has, for the last step.
struct NodeResources {
  std::string host;
  int ranks = 1;                        // ranks placed on this node
  std::optional<uint64_t> memory_bytes; // available memory per rank's device: host
                                        // (MemAvailable or the memory cgroup's room,
                                        // whichever is less, / ranks) or GPU (free memory)
};

// Checks that depend on the ranks: the root exists, MPI's int counts, --pairs has two
// nodes. (Memory is planned apart: memory_plan.h.)
Result<void> validate_for_world(const Options& options, BackendKind backend, int nranks,
                                const std::vector<NodeResources>& nodes);

} // namespace fabric::nccltest
