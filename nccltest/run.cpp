#include "nccltest/run.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/log.h"
#include "nccltest/env_filter.h"
#include "nccltest/line_rate.h"
#include "nccltest/nccl_backend.h"
#include "nccltest/outputs.h"
#include "nccltest/pairs_run.h"
#include "nccltest/sizes.h"
#include "nccltest/summary.h"
#include "nccltest/sweep.h"
#include "nccltest/text_report.h"

namespace fabric::nccltest {
namespace {

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// What the watchdog may need from another thread while the main thread is stuck.
struct LiveRecord {
  std::mutex mutex;
  RunRecord record;
};

RunHeader make_header(const Session& s) {
  const Options& o = s.options;
  RunHeader h;
  h.program = collective_program(o.collective);
  h.nccl_headers = nccl::headers_version();
  h.nccl_library = s.nccl_library;
  h.min_bytes = o.sweep.min_bytes;
  h.max_bytes = o.sweep.max_bytes;
  h.step_bytes = o.sweep.step_bytes;
  h.step_factor = o.sweep.step_factor;
  h.warmup_iters = o.warmup_iters;
  h.iters = o.iters;
  h.agg_iters = o.agg_iters;
  h.check_iters = o.check_iters;
  h.graph_launches = o.graph_launches;
  h.blocking = o.blocking;
  if (s.per_process > 1) {
    h.nthreads = o.nthreads;
    h.ngpus = o.ngpus;
  }
  h.unalign = o.unalign;
  h.report_cputime = o.report_cputime;
  h.report_timestamps = o.report_timestamps;
  h.parallel_init = o.parallel_init;
  h.per_iteration = o.per_iteration;
  h.per_iteration_skip = o.per_iteration_skip;
  h.backend = std::string(backend_name(s.backend));
  h.backend_reason = s.backend_reason;
  h.launcher = std::string(launch_kind_name(s.launch.kind));
  h.nodes = s.nodes;
  h.timeout_s = o.timeout_s;
  h.ranks = s.rank_infos();
  h.json_path = o.json_path;
  h.table = !o.pairs;
  for (DataType t : o.types) {
    std::string rounding =
        describe_rounding(rounded_sizes(sweep_sizes(o.sweep), o.collective, t, s.nranks()),
                          o.collective, t, s.nranks());
    if (!rounding.empty()) h.notes.push_back(rounding);
  }
  if (!s.memory_note.empty()) h.notes.push_back(s.memory_note);
  if (!s.split_note.empty()) h.notes.push_back(s.split_note);
  for (const std::string& note : o.notes)
    h.notes.push_back(note);
  if (!s.nccl_log_note.empty()) h.notes.push_back(s.nccl_log_note);
  for (const std::string& note : s.setup_notes)
    h.notes.push_back(note);
  if (s.fault.any()) {
    h.notes.push_back("TEST-ONLY FAULT INJECTION IN FORCE (" + std::string(kFaultEnv) + "=" +
                      s.fault.text + "): these results are not measurements");
  }
  return h;
}

Threshold threshold_from(const Options& o) {
  Threshold t;
  t.min_busbw = o.min_busbw;
  t.min_busbw_pct = o.min_busbw_pct;
  if (!t.min_busbw) {
    if (auto env = nccl_tests_min_bw(std::getenv("NCCL_TESTS_MIN_BW"))) {
      t.min_busbw = env;
      t.from_nccl_tests_env = true;
    }
  }
  return t;
}

Result<void> write_outputs(const Options& o, const RunRecord& record) {
  if (o.json_path) {
    FABRIC_TRY(write_file_atomic(*o.json_path, render_json_report(record)).context("writing -J"));
  }
  if (o.prom_path) {
    double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    FABRIC_TRY(
        write_file_atomic(*o.prom_path, render_prom_report(record, now)).context("writing --prom"));
  }
  if (o.plot_path && !record.rows.empty()) {
    FABRIC_TRY(
        write_file_atomic(*o.plot_path, render_busbw_plot(record)).context("writing --plot"));
  }
  if (o.pairs_heatmap && record.pairs) {
    FABRIC_TRY(write_file_atomic(*o.pairs_heatmap, probes::render_mesh_svg(record.pairs->mesh))
                   .context("writing --pairs-heatmap"));
  }
  return Ok();
}

// Each rank's transport as NCCL logged it, gathered on rank 0.
Result<std::optional<std::vector<TransportReport>>> collect_transport(Session& s) {
  using Reports = std::optional<std::vector<TransportReport>>;
  if (s.backend != BackendKind::kNccl || s.nccl_log_dir.empty()) return Reports();
  std::string mine = read_nccl_logs(s.nccl_log_dir, "nccl.");
  FABRIC_ASSIGN_OR_RETURN(std::vector<std::string> logs, s.group->allgather(mine));
  std::vector<TransportReport> reports;
  for (const std::string& log : logs)
    reports.push_back(parse_nccl_log(log));
  return Reports(std::move(reports));
}

// -M 1: what the sizes' collectives took on this process's GPUs since `free_before`, with
// its set-up figures, then the largest of each over every process (nccl-tests' MPI_MAX).
Result<GpuMemoryUsage> gather_gpu_memory(Session& s, const std::vector<std::int64_t>& free_before) {
  FABRIC_ASSIGN_OR_RETURN(std::vector<std::int64_t> free_after, s.engine->free_device_memory());
  s.gpu_memory.collective = largest_drop(free_before, free_after);
  FABRIC_ASSIGN_OR_RETURN(std::vector<std::string> all,
                          s.group->allgather(encode_usage(s.gpu_memory)));
  std::vector<GpuMemoryUsage> usages;
  for (const std::string& text : all) {
    std::optional<GpuMemoryUsage> usage = decode_usage(text);
    if (!usage) {
      return Error(ErrorCode::kDecode, "gathering -M's GPU memory figures", "'" + text + "'");
    }
    usages.push_back(*usage);
  }
  return largest_usage(usages);
}

// The measurements proper, on every rank; rank 0 prints and records.
Result<int> measure(Session& s, LiveRecord& live) {
  const Options& o = s.options;
  const bool root = s.rank() == 0;
  RunFooter footer;
  footer.threshold = threshold_from(o);
  footer.line_rate = line_rate_ceiling(s.rank_infos());

  auto on_row = [&](const SizeRow& row) {
    print(render_text_row(row));
    std::lock_guard lock(live.mutex);
    live.record.rows.push_back(row);
  };

  SweepContext context{o,       *s.engine, *s.group, s.progress, s.fault, live.record.header.ranks,
                       &s.abort};
  std::vector<SizeRow> rows;
  std::optional<PairsReport> pairs;
  std::vector<std::int64_t> free_before;
  if (o.memory_report) {
    FABRIC_ASSIGN_OR_RETURN(free_before, s.engine->free_device_memory());
  }
  for (DataType type : o.types) {
    for (ReduceOp op : o.ops) {
      if (o.leaves_out(type, op)) continue; // named in the header's notes
      if (o.pairs) {
        FABRIC_ASSIGN_OR_RETURN(PairsReport report, run_pairs(s, type, op));
        if (root) print(render_pairs_text(report));
        pairs = std::move(report);
        continue;
      }
      // -r -1: every rank is the root in turn, as nccl-tests' broadcast and reduce do.
      const bool every_root = uses_root(o.collective) && o.root < 0;
      const int last_root = every_root ? s.size() - 1 : o.root;
      for (int coll_root = every_root ? 0 : o.root; coll_root <= last_root; ++coll_root) {
        FABRIC_ASSIGN_OR_RETURN(SweepResult sweep, run_sweep(context, type, op, coll_root, on_row));
        footer.out_of_bounds += sweep.out_of_bounds;
        for (auto& f : sweep.failures)
          footer.failures.push_back(std::move(f));
        for (auto& r : sweep.rows)
          rows.push_back(std::move(r));
      }
    }
  }
  if (o.memory_report) {
    FABRIC_ASSIGN_OR_RETURN(GpuMemoryUsage usage, gather_gpu_memory(s, free_before));
    footer.gpu_memory = usage;
  }
  FABRIC_ASSIGN_OR_RETURN(auto transport, collect_transport(s));
  bool rdma_missing = false;
  if (transport && !transport->empty()) {
    for (const TransportReport& t : *transport)
      rdma_missing = rdma_missing || socket_fallback(t);
    if (root) print(render_transport_lines(transport->front()));
  }

  apply_threshold(footer, rows);
  const int status = run_exit_status(footer, o.require_rdma, rdma_missing);

  if (root) {
    if (!o.pairs) print(render_text_footer(footer, live.record.header.program));
    std::lock_guard lock(live.mutex);
    RunRecord& record = live.record;
    record.rows = rows;
    record.footer = footer;
    record.transport = transport;
    record.pairs = pairs;
    record.end_time = now_text();
    FABRIC_TRY(write_outputs(o, record));
  }
  return status;
}

void report_failure(Session& s, const Error& e, bool shared) {
  relay_nccl_warnings(s); // NCCL's own words on what failed, before ours
  if (shared && s.rank() != 0) return;
  std::string program = kProgram;
  if (s.size() > 1 && !shared) program += ": rank " + std::to_string(s.rank());
  log::report_error(program, e);
}

} // namespace

int run_nccltest(Options options, Launch launch, FaultPlan fault, int* argc, char*** argv) {
  Session s;
  s.options = std::move(options);
  s.launch = std::move(launch);
  s.fault = std::move(fault);
  for (const std::string& w : s.launch.warnings) {
    if (s.launch.rank == 0) spdlog::warn("{}", w);
  }
  if (s.fault.any())
    spdlog::warn("test-only fault injection in force: {}={}", kFaultEnv, s.fault.text);

  LiveRecord live;
  auto on_hang = [&s, &live](const HangReport& report) {
    print(render_hang_report(report));
    if (s.options.json_path) {
      std::lock_guard lock(live.mutex);
      live.record.hang = report;
      live.record.end_time = now_text();
      (void)write_file_atomic(*s.options.json_path, render_json_report(live.record));
    }
    abort_run(s, kExitHang, "watchdog: " + report.cause);
  };

  bool shared = false;
  if (auto opened = open_session(s, argc, argv, on_hang, shared); !opened.ok()) {
    report_failure(s, opened.error(), shared);
    const int status = exit_status_for(opened.error().code());
    // A rank that fails alone would leave the others waiting for it.
    if (!shared && s.group && s.size() > 1) s.group->abort(status, opened.error().message());
    return status;
  }
  if (s.backend == BackendKind::kNccl && s.rank() == 0 && s.options.require_rdma) {
    spdlog::info("reading NCCL's transport from its INFO log");
  }

  {
    std::lock_guard lock(live.mutex);
    live.record.start_time = now_text();
    live.record.collective = std::string(collective_name(s.options.collective));
    live.record.args = s.options.args;
    live.record.env = reported_environment();
    live.record.fault = s.fault.any() ? s.fault.text : "";
  }
  auto engine = open_engine(s);
  if (!engine.ok()) {
    carry_out_abort(s);
    report_failure(s, engine.error(), false);
    const int status = exit_status_for(engine.error().code());
    if (s.size() > 1) s.group->abort(status, engine.error().message());
    return status;
  }
  {
    std::lock_guard lock(live.mutex);
    live.record.header = make_header(s);
  }
  if (s.rank() == 0) print(render_text_header(live.record.header));

  Result<int> measured = measure(s, live);
  if (!measured.ok()) {
    carry_out_abort(s); // the error was the abort's: the watchdog's status, not the error's
    report_failure(s, measured.error(), false);
    const int status = exit_status_for(measured.error().code());
    if (s.size() > 1) s.group->abort(status, measured.error().message());
    return status;
  }
  s.progress.finished();
  // Every rank ends with rank 0's verdict, so that mpirun's status is the run's.
  auto verdict = s.group->broadcast(std::to_string(*measured));
  if (s.monitor) s.monitor->stop();
  carry_out_abort(s);
  if (!verdict.ok()) {
    report_failure(s, verdict.error(), false);
    return kExitSystem;
  }
  return std::atoi(verdict->c_str());
}

} // namespace fabric::nccltest
