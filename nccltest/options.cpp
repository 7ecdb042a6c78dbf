#include "nccltest/options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "common/units.h"
#include "nccltest/nccl_log.h"
#include "nccltest/per_iteration.h"

namespace fabric::nccltest {
namespace {

Error usage(const std::string& option, const std::string& detail) {
  return Error(ErrorCode::kInvalidArgument, option, detail);
}

Result<std::size_t> size_option(const std::string& text, const char* option) {
  FABRIC_ASSIGN_OR_RETURN(uint64_t bytes, units::parse_size(text, option));
  if (bytes > (uint64_t{1} << 46)) {
    return usage(option, "'" + text + "' is more than 64 TiB");
  }
  return static_cast<std::size_t>(bytes);
}

std::string join_types(BackendKind b) {
  std::string out;
  for (DataType t : kAllDataTypes) {
    if (backend_has_type(b, t)) out += (out.empty() ? "" : ", ") + std::string(data_type_name(t));
  }
  return out;
}

// nccl-tests' flags that select what fabric-nccltest has no code for: refused only where
// running anyway would print something else than what was asked for.
Result<void> nccl_tests_only_flags(const RawOptions& raw) {
  if (raw.device_impl != 0) {
    return Error(ErrorCode::kUnsupported, "-D/--device_implementation",
                 std::to_string(raw.device_impl) +
                     ": nccl-tests' own device-API kernels are not part of fabric-nccltest; "
                     "NCCL's implementation (-D 0) is what it measures");
  }
  return Ok();
}

std::string join_ops(BackendKind b) {
  std::string out;
  for (ReduceOp op : kAllReduceOps) {
    if (backend_has_op(b, op)) out += (out.empty() ? "" : ", ") + std::string(reduce_op_name(op));
  }
  return out;
}

} // namespace

void add_options(CLI::App& app, RawOptions& raw) {
  app.add_option("--collective", raw.collective,
                 "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall or "
                 "sendrecv (default: the program's name, all_reduce_perf and so on, else "
                 "all_reduce)");
  app.add_option("--backend", raw.backend,
                 "nccl (GPUs), mpi (host memory), or auto: nccl when a CUDA device is visible, "
                 "else mpi (default auto)");
  app.add_option("-b,--minbytes", raw.min_bytes, "Smallest message, e.g. 8, 64K, 1M (default 32M)");
  app.add_option("-e,--maxbytes", raw.max_bytes, "Largest message (default 32M)");
  app.add_option("-i,--stepbytes", raw.step_bytes, "Step between sizes when -f is 1 (default 1M)");
  app.add_option("-f,--stepfactor", raw.step_factor,
                 "Multiply the size by this between steps (default 1: add -i)");
  app.add_option("-n,--iters", raw.iters, "Timed iterations per size (default 20)");
  app.add_option("-w,--warmup_iters", raw.warmup_iters, "Warm-up iterations per size (default 1)");
  app.add_option("-m,--agg_iters", raw.agg_iters, "Operations per timed iteration (default 1)");
  app.add_option("-c,--check", raw.check_iters,
                 "Checked repetitions per size, each rank checked on its own; 0: none "
                 "(default 1)");
  app.add_option("-d,--datatype", raw.datatype,
                 "float, double, int32, int64, half, bfloat16 (nccl), or all (default float)");
  app.add_option("-o,--op", raw.op, "sum, prod, min, max, avg (nccl), or all (default sum)");
  app.add_option("-r,--root", raw.root,
                 "Root rank of broadcast and reduce; -1: every rank in turn (default 0)");
  app.add_option("-a,--average", raw.average,
                 "Time reported: 0 rank 0's, 1 the mean over ranks, 2 the minimum, 3 the "
                 "maximum (default 1)");
  app.add_option("-G,--cudagraph", raw.graph_launches,
                 "Capture the timed iterations in a CUDA graph and launch it this many times "
                 "(nccl backend; default 0)");
  app.add_option("-z,--blocking", raw.blocking,
                 "1: wait for each operation, then a barrier of all ranks; 2: wait for each, "
                 "no barrier; 3: wait and barrier after each iteration of -m operations, the "
                 "barrier not timed (nccl-tests' -z; default 0)");
  app.add_option("-g,--ngpus", raw.ngpus,
                 "GPUs per thread, one rank each (nccl backend; default 1): -g 8 drives a "
                 "whole 8-GPU node from one process");
  app.add_option("-t,--nthreads", raw.nthreads,
                 "Threads per process, each with -g GPUs (nccl backend; default 1)");
  app.add_option("-R,--local_register", raw.registration,
                 "Buffer registration: 0 none, 1 ncclCommRegister, 2 symmetric windows "
                 "(NCCL 2.27; default 0)");
  app.add_option("-N,--run_cycles", raw.run_cycles,
                 "Run the sizes this many times, printing each; 0: until stopped (default 1)");
  app.add_option("-p,--parallel_init", raw.parallel_init,
                 "nccl-tests' parallel communicator set-up by its threads; one thread per rank "
                 "here, so nothing to parallelise (accepted, noted)");
  app.add_option("-y,--stream_null", raw.stream_null,
                 "1: run on CUDA's legacy default stream instead of a non-blocking one (nccl "
                 "backend; not with -G)");
  app.add_option("-C,--report_cputime", raw.report_cputime,
                 "1: report the host's time to issue the operations (\"cputime\") instead of "
                 "their completion time");
  app.add_option("-S,--report_timestamps", raw.report_timestamps,
                 "1: end each row with the time it completed");
  app.add_option("-x,--cta_policy", raw.cta_policy,
                 "NCCL's CTA policy: 0 default, 1 efficiency (NCCL 2.27), 2 zero (NCCL 2.28) "
                 "(nccl backend; default: NCCL's)");
  app.add_option("-D,--device_implementation", raw.device_impl,
                 "nccl-tests' own device-API kernels: only 0 (NCCL's implementation) here");
  app.add_option("-V,--device_cta_count", raw.device_cta_count,
                 "CTAs of -D's kernels (only with -D > 0)");
  app.add_option("-M,--memory", raw.memory_report,
                 "1: after the footer, the GPU memory the communicators, the buffers and the "
                 "collectives took, as nccl-tests reports it (nccl backend)");
  app.add_option("-u,--unalign", raw.unalign,
                 "Start the buffers this many elements past their alignment (default 0)");
  app.add_option("-I,--per_iter_timing", raw.per_iter_timing,
                 "1: time every iteration and add its summary after each #wrong: i_min, i_max, "
                 "i_p99 and i_cv% of the slowest rank's times (default 0)");
  app.add_option("-K,--per_iter_skip", raw.per_iter_skip,
                 "Leading iterations -I 1 leaves out of its summary (default 0)");
  app.add_option("-T,--timeout", raw.timeout_s,
                 "Watchdog: abort the run, naming the ranks that had not finished, when "
                 "communicator setup or any phase makes no progress for this many seconds "
                 "(exit 5); 0 turns it off (default 0)");
  app.add_option("-J,--output_file", raw.json_path,
                 "Write nccl-tests' JSON (version 3) plus a \"fabric\" object to this file");
  app.add_option("--prom", raw.prom_path,
                 "Write the results in Prometheus text format to this file, atomically");
  app.add_option("--plot", raw.plot_path, "Write an SVG plot of busbw against message size");
  app.add_option("--min-busbw", raw.min_busbw,
                 "Exit 3 when the average busbw over sizes of 64 MiB and more is below this "
                 "(GB/s)");
  app.add_option("--min-busbw-pct", raw.min_busbw_pct,
                 "Exit 3 when that average is below this percentage of the line-rate ceiling");
  app.add_flag("--pairs", raw.pairs,
               "Run the collective on every pair of nodes, in contention-free rounds, and "
               "name the slow node and the slow pair");
  app.add_option("--pairs-by", raw.pairs_by,
                 "What a --pairs node is: host (default), or rank (each rank on its own)");
  app.add_option("--pairs-size", raw.pairs_size, "Message size of --pairs (default: -e)");
  app.add_option("--pairs-pattern", raw.pairs_pattern,
                 "Pairs of --pairs: all-pairs (default, n - 1 rounds), ring (2 or 3 rounds) or "
                 "random[:K] (K matchings), then follow-up rounds that name the slow node or link");
  app.add_option("--pairs-heatmap", raw.pairs_heatmap,
                 "Write the --pairs node x node matrix "
                 "as an SVG heatmap");
  app.add_flag("--require-rdma", raw.require_rdma,
               "nccl backend: exit 3 when NCCL fell back to sockets instead of RDMA");
  app.add_option("--nic", raw.nic,
                 "The NIC (RDMA device or netdev) whose speed bounds busbw, when the default "
                 "choice is wrong");
  app.add_option("--rendezvous-timeout", raw.rendezvous_timeout_s,
                 "Without mpirun: how long ranks wait for each other at start, in seconds "
                 "(default 300)");
}

Result<Options> validate_options(const RawOptions& raw, std::vector<std::string> args) {
  Options o;
  o.args = std::move(args);
  const std::optional<Collective> named = collective_of_program(raw.program);
  if (raw.collective.empty()) {
    o.collective = named.value_or(Collective::kAllReduce);
  } else {
    FABRIC_ASSIGN_OR_RETURN(o.collective, parse_collective(raw.collective));
    if (named && *named != o.collective) {
      return usage("--collective", raw.collective + " contradicts the program's name, " +
                                       collective_program(*named));
    }
  }
  if (raw.backend != "auto") {
    FABRIC_ASSIGN_OR_RETURN(BackendKind b, parse_backend(raw.backend));
    o.backend = b;
  }
  FABRIC_ASSIGN_OR_RETURN(o.sweep.min_bytes, size_option(raw.min_bytes, "-b/--minbytes"));
  FABRIC_ASSIGN_OR_RETURN(o.sweep.max_bytes, size_option(raw.max_bytes, "-e/--maxbytes"));
  FABRIC_ASSIGN_OR_RETURN(o.sweep.step_bytes, size_option(raw.step_bytes, "-i/--stepbytes"));
  FABRIC_ASSIGN_OR_RETURN(uint64_t factor,
                          units::parse_uint(raw.step_factor, "-f/--stepfactor", 1, 1024));
  o.sweep.step_factor = factor;
  // --pairs measures one size (-e, or --pairs-size): -b's default must not be in the way.
  if (raw.pairs) o.sweep.min_bytes = std::min(o.sweep.min_bytes, o.sweep.max_bytes);
  if (auto swept = validate_sweep(o.sweep); !swept.ok()) {
    // Too many steps of the default -i from a large -e: -i is not what the user typed.
    const RawOptions defaults;
    if (swept.error().operation() == "-i/--stepbytes" && raw.step_bytes == defaults.step_bytes &&
        raw.step_factor == defaults.step_factor) {
      const std::string& detail = swept.error().detail();
      const auto makes = detail.find("makes");
      return usage("-e/--maxbytes",
                   "'" + raw.max_bytes + "' in steps of 1 MiB (-i's default) " +
                       (makes == std::string::npos ? detail : detail.substr(makes)) +
                       "; give -f 2 to double the size at each step");
    }
    return std::move(swept).error();
  }

  auto in_range = [](int v, int lo, int hi, const char* option) -> Result<void> {
    if (v < lo || v > hi) {
      return usage(option, std::to_string(v) + " is out of range (" + std::to_string(lo) + " to " +
                               std::to_string(hi) + ")");
    }
    return Ok();
  };
  FABRIC_TRY(in_range(raw.iters, 1, 1000000, "-n/--iters"));
  FABRIC_TRY(in_range(raw.warmup_iters, 0, 1000000, "-w/--warmup_iters"));
  FABRIC_TRY(in_range(raw.agg_iters, 1, 10000, "-m/--agg_iters"));
  FABRIC_TRY(in_range(raw.check_iters, 0, 1000, "-c/--check"));
  FABRIC_TRY(in_range(raw.average, 0, 3, "-a/--average"));
  FABRIC_TRY(in_range(raw.graph_launches, 0, 100000, "-G/--cudagraph"));
  FABRIC_TRY(in_range(raw.blocking, 0, 3, "-z/--blocking"));
  FABRIC_TRY(in_range(raw.root, -1, 65535, "-r/--root"));
  FABRIC_TRY(in_range(raw.ngpus, 1, 64, "-g/--ngpus"));
  FABRIC_TRY(in_range(raw.nthreads, 1, 64, "-t/--nthreads"));
  FABRIC_TRY(in_range(raw.registration, 0, 2, "-R/--local_register"));
  FABRIC_TRY(in_range(raw.run_cycles, 0, 1000000, "-N/--run_cycles"));
  FABRIC_TRY(in_range(raw.parallel_init, 0, 1, "-p/--parallel_init"));
  FABRIC_TRY(in_range(raw.stream_null, 0, 1, "-y/--stream_null"));
  FABRIC_TRY(in_range(raw.report_cputime, 0, 1, "-C/--report_cputime"));
  FABRIC_TRY(in_range(raw.report_timestamps, 0, 1, "-S/--report_timestamps"));
  FABRIC_TRY(in_range(raw.cta_policy, -1, 2, "-x/--cta_policy"));
  FABRIC_TRY(in_range(raw.memory_report, 0, 1, "-M/--memory"));
  FABRIC_TRY(in_range(raw.unalign, 0, 4096, "-u/--unalign"));
  FABRIC_TRY(nccl_tests_only_flags(raw));
  o.ngpus = raw.ngpus;
  o.nthreads = raw.nthreads;
  o.registration = raw.registration;
  o.iters = raw.iters;
  o.warmup_iters = raw.warmup_iters;
  o.agg_iters = raw.agg_iters;
  o.check_iters = raw.check_iters;
  o.average = raw.average;
  o.graph_launches = raw.graph_launches;
  o.blocking = raw.blocking;
  o.root = raw.root;
  // -I and -K as nccl-tests checks them, in its order and with its words: a value it
  // cannot use is switched off, never a refused run.
  int per_iteration = raw.per_iter_timing;
  if (per_iteration != 0 && per_iteration != 1) {
    o.notes.push_back("per-iteration timing (-I) only supports 0=off or 1=on. Disabling.");
    per_iteration = 0;
  }
  if (per_iteration && o.graph_launches >= 1) {
    o.notes.push_back(
        "per-iteration timing (-I) is incompatible with CUDA graph mode (-G). Disabling.");
    per_iteration = 0;
  }
  if (o.blocking == 3 && o.graph_launches > 0) {
    o.notes.push_back("-z 3 (blocking): incompatible with -G (CUDA graphs); switched off, as "
                      "nccl-tests does");
    o.blocking = 0;
  }
  o.run_cycles = raw.run_cycles;
  o.parallel_init = raw.parallel_init != 0;
  o.report_cputime = raw.report_cputime != 0;
  o.report_timestamps = raw.report_timestamps != 0;
  o.unalign = raw.unalign;
  o.stream_null = raw.stream_null != 0;
  o.cta_policy = raw.cta_policy;
  if (raw.parallel_init) {
    o.notes.push_back("-p 1 (parallel_init): each process makes its communicators in one NCCL "
                      "group from one thread, as nccl-tests does without -p; -t's threads then "
                      "take their own");
  }
  o.memory_report = raw.memory_report != 0;
  if (o.stream_null && o.graph_launches > 0) {
    return usage("-y/--stream_null", "1 with -G: CUDA cannot capture its legacy default stream "
                                     "into a graph (nccl-tests fails at cudaStreamBeginCapture)");
  }
  int skip = raw.per_iter_skip;
  if (skip < 0 || skip >= o.iters) {
    o.notes.push_back("per-iteration skip (-K) must be between 0 and " +
                      std::to_string(o.iters - 1) + ". Disabling.");
    skip = 0;
  }
  if (skip && !per_iteration) {
    o.notes.push_back("per-iteration skip (-K) requires per-iteration timing (-I 1). Disabling.");
    skip = 0;
  }
  if (per_iteration && o.iters > kMaxPerIterationIterations) {
    return usage("-I/--per_iter_timing", "keeps one time per iteration and rank: at most " +
                                             std::to_string(kMaxPerIterationIterations) +
                                             " iterations, and -n is " + std::to_string(o.iters));
  }
  o.per_iteration = per_iteration == 1;
  o.per_iteration_skip = skip;
  if (raw.device_cta_count != 16) {
    o.notes.push_back("-V " + std::to_string(raw.device_cta_count) +
                      " (device_cta_count): only counts with -D > 0, which this tool does not run");
  }

  if (raw.datatype == "all") {
    o.all_types = true;
    o.types.assign(std::begin(kAllDataTypes), std::end(kAllDataTypes));
  } else {
    FABRIC_ASSIGN_OR_RETURN(DataType t, parse_data_type(raw.datatype));
    o.types = {t};
  }
  if (raw.op == "all") {
    o.all_ops = true;
    o.ops.assign(std::begin(kAllReduceOps), std::end(kAllReduceOps));
  } else {
    FABRIC_ASSIGN_OR_RETURN(ReduceOp op, parse_reduce_op(raw.op));
    o.ops = {op};
  }
  // Operations only multiply the runs of collectives that print one.
  if (!prints_op(o.collective)) o.ops = {ReduceOp::kSum};

  if (!(raw.timeout_s >= 0) || raw.timeout_s > 7 * 86400) {
    return usage("-T/--timeout", std::to_string(raw.timeout_s) + " is not 0 to 604800 seconds");
  }
  o.timeout_s = raw.timeout_s;
  if (!(raw.rendezvous_timeout_s > 0) || raw.rendezvous_timeout_s > 86400) {
    return usage("--rendezvous-timeout",
                 std::to_string(raw.rendezvous_timeout_s) + " is not above 0 and at most 86400");
  }
  o.rendezvous_timeout_s = raw.rendezvous_timeout_s;
  if (raw.min_busbw && !(*raw.min_busbw > 0)) {
    return usage("--min-busbw", std::to_string(*raw.min_busbw) + " is not above 0");
  }
  if (raw.min_busbw_pct && !(*raw.min_busbw_pct > 0 && *raw.min_busbw_pct <= 100)) {
    return usage("--min-busbw-pct", std::to_string(*raw.min_busbw_pct) + " is not in (0, 100]");
  }
  o.min_busbw = raw.min_busbw;
  o.min_busbw_pct = raw.min_busbw_pct;

  auto path = [](const std::string& p) -> std::optional<std::string> {
    if (p.empty()) return std::nullopt;
    return p;
  };
  o.json_path = path(raw.json_path);
  o.prom_path = path(raw.prom_path);
  o.plot_path = path(raw.plot_path);
  o.pairs_heatmap = path(raw.pairs_heatmap);
  o.nic = path(raw.nic);

  o.pairs = raw.pairs;
  if (raw.pairs_by == "host") {
    o.pairs_by = PairsBy::kHost;
  } else if (raw.pairs_by == "rank") {
    o.pairs_by = PairsBy::kRank;
  } else {
    return usage("--pairs-by", "unknown value '" + raw.pairs_by + "' (host or rank)");
  }
  if (!raw.pairs_size.empty()) {
    FABRIC_ASSIGN_OR_RETURN(std::size_t bytes, size_option(raw.pairs_size, "--pairs-size"));
    if (bytes == 0) return usage("--pairs-size", "0 measures nothing");
    o.pairs_bytes = bytes;
  }
  if (!raw.pairs_pattern.empty()) {
    auto pattern = probes::parse_pattern(raw.pairs_pattern);
    if (!pattern.ok()) return usage("--pairs-pattern", pattern.error().detail());
    if (pattern->kind == probes::PatternKind::kLeafLocal ||
        pattern->kind == probes::PatternKind::kCrossLeaf) {
      return usage("--pairs-pattern", "'" + raw.pairs_pattern +
                                          "' needs each node's leaf, which ranks do not carry: "
                                          "run fabric-probe mesh with a hosts file for it");
    }
    o.pairs_pattern = *pattern;
  }
  if (!o.pairs &&
      (o.pairs_bytes || o.pairs_heatmap || raw.pairs_by != "host" || !raw.pairs_pattern.empty())) {
    return usage("--pairs-size/--pairs-heatmap/--pairs-by/--pairs-pattern",
                 "only mean something with --pairs");
  }
  // A pairs run measures pairs at one size, no sweep: a busbw plot would be empty and a
  // Prometheus file would carry an average of 0 beside success 1.
  if (o.pairs && o.plot_path) {
    return usage("--plot", "draws a size sweep, and --pairs runs none; --pairs-heatmap draws "
                           "the pairs, -J keeps every pair's result");
  }
  if (o.pairs && o.prom_path) {
    return usage("--prom", "has no series for pair results, and --pairs measures no sweep; "
                           "-J keeps every pair's result");
  }
  if (o.pairs && o.sweep.max_bytes == 0 && !o.pairs_bytes) {
    return usage("--pairs", "-e/--maxbytes 0 measures nothing; give -e or --pairs-size");
  }
  o.require_rdma = raw.require_rdma;
  return o;
}

Result<void> validate_for_backend(Options& o, BackendKind b) {
  const std::string backend = "the " + std::string(backend_name(b)) + " backend";
  if (o.all_types) {
    std::erase_if(o.types, [&](DataType t) { return !backend_has_type(b, t); });
  }
  for (DataType t : o.types) {
    if (!backend_has_type(b, t)) {
      return usage("-d/--datatype", std::string(data_type_name(t)) + ": " + backend +
                                        " has no such type (it has " + join_types(b) + ")");
    }
  }
  if (o.all_ops) std::erase_if(o.ops, [&](ReduceOp op) { return !backend_has_op(b, op); });
  if (uses_op(o.collective)) {
    for (ReduceOp op : o.ops) {
      if (!backend_has_op(b, op)) {
        return usage("-o/--op", std::string(reduce_op_name(op)) + ": " + backend +
                                    " has no such operation (it has " + join_ops(b) + ")");
      }
    }
  }
  if (b == BackendKind::kMpi) {
    auto note = [&](bool given, const std::string& line) {
      if (given) o.notes.push_back(line + " on host memory (mpi backend): ignored");
    };
    note(o.stream_null, "-y 1 (stream_null): no CUDA stream");
    note(o.cta_policy >= 0, "-x " + std::to_string(o.cta_policy) + " (cta_policy): no NCCL");
    note(o.memory_report, "-M 1 (memory): no GPU memory to report");
    o.memory_report = false;
  }
  if (b == BackendKind::kMpi && o.graph_launches > 0) {
    return usage("-G/--cudagraph",
                 std::to_string(o.graph_launches) + ": CUDA graphs need the nccl backend");
  }
  if (b == BackendKind::kNccl && o.require_rdma &&
      !plan_nccl_log(std::getenv("NCCL_DEBUG"), std::getenv("NCCL_DEBUG_FILE"), nullptr, "")
           .capture) {
    return usage("--require-rdma",
                 "needs NCCL's transport from its INFO log, which fabric-nccltest reads only "
                 "when NCCL_DEBUG and NCCL_DEBUG_FILE are unset (yours are left alone)")
        .with_hint("unset NCCL_DEBUG and NCCL_DEBUG_FILE (NCCL's warnings are then relayed to "
                   "stderr), or drop --require-rdma");
  }
  if (b == BackendKind::kMpi && o.require_rdma) {
    return usage("--require-rdma", "reads NCCL's transport choice: it needs the nccl backend");
  }
  return Ok();
}

Result<void> restrict_fp8(Options& o, int nccl_version, int min_compute_capability) {
  std::string missing;
  if (nccl_version < 22400) {
    missing = "NCCL 2.24 or newer (this one is " + std::to_string(nccl_version) + ")";
  } else if (min_compute_capability < 90) {
    missing = "every GPU of the run to be a Hopper or newer (compute capability 9.0; one has " +
              std::to_string(min_compute_capability / 10) + "." +
              std::to_string(min_compute_capability % 10) + ")";
  }
  if (missing.empty()) return Ok();
  if (o.all_types) {
    std::erase_if(o.types, is_fp8);
    return Ok();
  }
  for (DataType t : o.types) {
    if (is_fp8(t)) {
      return usage("-d/--datatype", std::string(data_type_name(t)) + ": fp8 needs " + missing);
    }
  }
  return Ok();
}

bool Options::leaves_out(DataType t, ReduceOp op) const {
  return std::find(left_out.begin(), left_out.end(), std::pair{t, op}) != left_out.end();
}

Result<void> restrict_one_rank_fp8(Options& o, int smallest_comm_ranks) {
  if (smallest_comm_ranks != 1 || !uses_op(o.collective)) return Ok();
  std::string names;
  for (DataType t : o.types) {
    for (ReduceOp op : o.ops) {
      if (!is_fp8(t) || (op != ReduceOp::kAvg && op != ReduceOp::kMulSum)) continue;
      o.left_out.emplace_back(t, op);
      names += (names.empty() ? "" : ", ") + std::string(data_type_name(t)) + " " +
               std::string(reduce_op_name(op));
    }
  }
  if (names.empty()) return Ok();
  const std::string why = "NCCL refuses fp8 avg and mulsum on a one-rank communicator "
                          "(ncclInvalidArgument from its one-rank path)";
  if (o.left_out.size() == o.types.size() * o.ops.size()) {
    return usage("-o/--op", names + ": " + why)
        .with_hint("run two ranks or more, or another -o or -d");
  }
  o.notes.push_back(names + " left out: " + why);
  return Ok();
}

Result<void> validate_for_world(const Options& o, BackendKind b, int nranks,
                                const std::vector<NodeResources>& nodes) {
  if (uses_root(o.collective) && o.root >= nranks) {
    return usage("-r/--root", std::to_string(o.root) + " is not a rank of this run (0 to " +
                                  std::to_string(nranks - 1) + ")");
  }
  if (b == BackendKind::kMpi) {
    // MPI counts are ints; the largest count a size produces is the receive buffer's.
    for (DataType t : o.types) {
      CollectiveCounts k =
          collective_counts(o.collective, o.sweep.max_bytes, data_type_size(t), nranks);
      if (std::max(k.send, k.recv) > static_cast<std::size_t>(INT_MAX)) {
        return usage("-e/--maxbytes", std::to_string(o.sweep.max_bytes) + " needs more than " +
                                          std::to_string(INT_MAX) + " " +
                                          std::string(data_type_name(t)) +
                                          " elements in one MPI call, which counts in int");
      }
    }
  }
  if (o.pairs && o.pairs_by == PairsBy::kHost && nodes.size() < 2) {
    return usage("--pairs", "needs ranks on two nodes or more (this run has " +
                                std::to_string(nodes.size()) +
                                "); --pairs-by rank pairs the ranks instead");
  }
  if (o.pairs && o.pairs_by == PairsBy::kRank && nranks < 2) {
    return usage("--pairs", "needs two ranks or more");
  }
  return Ok();
}

Result<void> check_output_paths(const Options& o) {
  const std::pair<const char*, const std::optional<std::string>*> outputs[] = {
      {"-J/--output_file", &o.json_path},
      {"--prom", &o.prom_path},
      {"--plot", &o.plot_path},
      {"--pairs-heatmap", &o.pairs_heatmap},
  };
  for (const auto& [option, path] : outputs) {
    if (!*path) continue;
    // write_file_atomic() writes a temporary file beside the target and renames it: the
    // folder must exist and take new files, and the target must not be a folder.
    std::string dir = path->value().substr(0, path->value().rfind('/') + 1);
    if (dir.empty()) dir = ".";
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return usage(option, **path + ": no folder " + dir + " to write it in");
    }
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      return Error::from_errno(errno, "access", std::string(option) + " " + **path)
          .with_hint("this user cannot create files in " + dir);
    }
    if (::stat(path->value().c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return usage(option, **path + " is a folder, not a file");
    }
  }
  return Ok();
}

} // namespace fabric::nccltest
