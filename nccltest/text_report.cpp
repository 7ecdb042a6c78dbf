#include "nccltest/text_report.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string_view>

#include "common/build_info.h"

namespace fabric::nccltest {
namespace {

// printf into a std::string; the attribute keeps the compiler checking every format.
__attribute__((format(printf, 1, 2))) std::string format(const char* fmt, ...) {
  std::va_list args;
  va_start(args, fmt);
  std::va_list again;
  va_copy(again, args);
  int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string out(static_cast<std::size_t>(n > 0 ? n : 0), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  va_end(again);
  return out;
}

std::string placement_fields(const PlacementResult& p,
                             const std::optional<PerIteration>& iterations) {
  std::string out = "  " + fixed_field(p.time_us, 7) + "  " + fixed_field(p.algbw, 6) + "  " +
                    fixed_field(p.busbw, 6);
  if (p.wrong) {
    out += format("  %6lld", static_cast<long long>(*p.wrong));
  } else {
    out += "    N/A";
  }
  // -I 1: writePerIterReport's four fields, each getFloatStr in 7 characters.
  if (iterations) {
    const IterationStats& s = iterations->stats;
    out += "  " + fixed_field(s.min, 7) + "  " + fixed_field(s.max, 7) + "  " +
           fixed_field(s.p99, 7) + "  " + fixed_field(s.cv_pct, 7);
  }
  return out;
}

std::string placement_name(bool in_place) {
  return in_place ? "in-place" : "out-of-place";
}

std::string failure_line(const RankCheckFailure& f) {
  std::string device = f.device < 0 ? "host memory" : "device " + std::to_string(f.device);
  return format("#  ! rank %d (%s, %s): %zu of %zu elements wrong, %zu B %s %s %s, first at "
                "element %zu: got %s, expected %s\n",
                f.rank, f.host.c_str(), device.c_str(), f.wrong, f.checked, f.bytes,
                std::string(data_type_name(f.type)).c_str(), f.op.c_str(),
                placement_name(f.in_place).c_str(), f.first_index, fixed_g(f.first_got).c_str(),
                fixed_g(f.first_expected).c_str());
}

} // namespace

std::string fixed_field(double value, int width) {
  for (int decimals : {2, 1}) {
    std::string s = format("%*.*f", width, decimals, value);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return format("%*.0f", width, value);
}

std::string fixed_g(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";
  int digits = static_cast<int>(std::floor(std::log10(std::fabs(value)))) + 1;
  int decimals = digits >= 6 ? 0 : 6 - digits;
  std::string s = format("%.*f", decimals, value);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0')
      s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string render_device_line(const RankInfo& r) {
  std::string info = r.device_name;
  if (r.nic) {
    info += format(" | nic %s %s Gb/s (%s)", r.nic->name.c_str(), fixed_g(r.nic->gbps).c_str(),
                   r.nic->source.c_str());
  }
  if (r.topology) info += " | topo " + *r.topology;
  return format("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", r.rank, r.group,
                r.pid, r.host.c_str(), r.device, r.pci_bus_id.c_str(), info.c_str());
}

std::string nccl_version_text(int code) {
  // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
         std::to_string(code % 100);
}

std::string render_text_header(const RunHeader& h) {
  std::string out;
  if (h.json_path) out += "# Writing JSON output to " + *h.json_path + "\n";
  // What ran, so that a pasted output is never taken for nccl-tests on the NCCL it was only
  // compiled against; the parsers in the field read the rows and the footer, not this line.
  out += "# fabric-nccltest " + std::string(build_info().version) + " (nccl-tests " +
         kNcclTestsVersion + " output), backend " + h.backend + ", NCCL library " +
         (h.nccl_library > 0 ? nccl_version_text(h.nccl_library) : "none") +
         (h.nccl_headers > 0 ? " (headers " + nccl_version_text(h.nccl_headers) + ")" : "") + "\n";
  out += "# Collective test starting: " + h.program + "\n";
  out += format("# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d "
                "iters: %d agg iters: %d validation: %d graph: %d unalign: %d\n",
                h.nthreads, h.ngpus, h.min_bytes, h.max_bytes,
                h.step_factor > 1 ? h.step_factor : h.step_bytes,
                h.step_factor > 1 ? "factor" : "bytes", h.warmup_iters, h.iters, h.agg_iters,
                h.check_iters, h.graph_launches, h.unalign);
  if (h.blocking == 1)
    out += "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n";
  if (h.blocking == 2)
    out += "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n";
  if (h.blocking == 3) {
    out += "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes "
           "barrier \n";
  }
  if (h.per_iteration) {
    // nccl-tests' line names its CUDA events; the mpi backend times with MPI_Wtime.
    out += std::string("# Per-Iteration Report: ") +
           (h.backend == "mpi" ? "MPI_Wtime" : "CUDA event") +
           " timing; i_* uses max over process rows";
    if (h.per_iteration_skip) {
      out += format("; summary skips first %d iterations", h.per_iteration_skip);
    }
    out += " \n";
  }
  if (h.parallel_init) {
    out += "# Parallel Init Enabled: threads call into NcclInitRank concurrently \n";
  }
  std::string nodes = format("%d rank%s on %d node%s", static_cast<int>(h.ranks.size()),
                             h.ranks.size() == 1 ? "" : "s", h.nodes, h.nodes == 1 ? "" : "s");
  std::string watchdog =
      h.timeout_s > 0 ? "watchdog " + fixed_g(h.timeout_s) + " s per phase" : "no watchdog (-T 0)";
  std::string launched =
      h.launcher == "single process" ? "started alone" : "launched by " + h.launcher;
  out += "# fabric-nccltest: backend " + h.backend + ", " + h.backend_reason + "; " + nodes + ", " +
         launched + "; " + watchdog + "\n";
  for (const std::string& note : h.notes)
    out += "# " + note + "\n";
  out += "#\n# Using devices\n";
  for (const RankInfo& r : h.ranks)
    out += render_device_line(r);
  out += "#\n";
  if (!h.table) return out;
  // As nccl-tests' writeResultHeader: -S adds a 19-wide "timestamp" column, -C names the
  // time columns "cputime", -I 1 adds four columns after each #wrong.
  const int stamp_width = h.report_timestamps ? 19 : 0;
  const char* stamp_label = h.report_timestamps ? "timestamp" : "";
  const char* stamp_format = h.report_timestamps ? "%Y-%m-%d %H:%M:%S" : "";
  const char* time = h.report_cputime ? "cputime" : "time";
  if (h.per_iteration) {
    out += format("# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)      "
                  "                          in-place (+ per-iteration)\n",
                  "", "", "", "", "");
    out += format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  "
                  "%6s  %6s  %7s  %7s  %7s  %7s %*s\n",
                  "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong",
                  "i_min", "i_max", "i_p99", "i_cv%", time, "algbw", "busbw", "#wrong", "i_min",
                  "i_max", "i_p99", "i_cv%", stamp_width, stamp_label);
    out += format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  "
                  "%6s  %6s  %7s  %7s  %7s  %7s %*s\n",
                  "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)",
                  "(us)", "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)",
                  stamp_width, stamp_format);
    return out;
  }
  out += format("# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
                "in-place          \n",
                "", "", "", "", "");
  out += format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size",
                "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong", time, "algbw",
                "busbw", "#wrong", stamp_width, stamp_label);
  out += format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "", stamp_width, stamp_format);
  return out;
}

std::string render_text_row(const SizeRow& row) {
  std::string out = format("%12zu  %12zu  %8s  %6s  %6d", row.bytes, row.count,
                           std::string(data_type_name(row.type)).c_str(), row.op.c_str(), row.root);
  out += placement_fields(row.out_of_place, row.out_of_place_iterations);
  out += placement_fields(row.in_place, row.in_place_iterations);
  if (!row.timestamp.empty()) out += format("%21s", row.timestamp.c_str());
  out += "\n";
  return out;
}

std::string render_text_footer(const RunFooter& f, const std::string& program) {
  std::string out;
  if (!f.failures.empty()) {
    out += "# Wrong results, per rank:\n";
    for (const RankCheckFailure& failure : f.failures)
      out += failure_line(failure);
  }
  out += format("# %-20s : %lld %s\n", "Out of bounds values",
                static_cast<long long>(f.out_of_bounds), f.out_of_bounds ? "FAILED" : "OK");
  // nccl-tests appends OK/FAILED only when a threshold is set, and a space in any case.
  std::string verdict;
  if (f.threshold_ok) verdict = *f.threshold_ok ? "OK" : "FAILED";
  // %g as nccl-tests prints it, exponent included: under 1e-4 GB/s (a loaded 2-core machine,
  // small sizes) a parser of nccl-tests' output reads "6.88115e-05", never "0.0000688115".
  out += format("# %-20s : %g %s\n", "Avg bus bandwidth", f.avg_busbw, verdict.c_str());
  if (f.line_rate.ceiling_gbytes) {
    double ceiling = *f.line_rate.ceiling_gbytes;
    out += format("# %-20s : %s GB/s busbw (%s); avg busbw is %s %% of it\n", "Line-rate ceiling",
                  fixed_g(ceiling).c_str(), f.line_rate.basis.c_str(),
                  fixed_g(ceiling > 0 ? 100.0 * f.avg_busbw / ceiling : 0).c_str());
  } else {
    out += format("# %-20s : none (%s)\n", "Line-rate ceiling", f.line_rate.basis.c_str());
  }
  if (f.threshold_ok && f.judged_busbw) {
    std::string required;
    if (f.threshold.min_busbw) required = fixed_g(*f.threshold.min_busbw) + " GB/s";
    if (f.threshold.min_busbw_pct) {
      required += (required.empty() ? "" : " and ") + fixed_g(*f.threshold.min_busbw_pct) +
                  " % of the line rate";
    }
    if (f.threshold.from_nccl_tests_env) required += " (NCCL_TESTS_MIN_BW, with its 10% slack)";
    out += format("# %-20s : %s GB/s average over %s, required %s: %s\n", "Busbw threshold",
                  fixed_g(*f.judged_busbw).c_str(), f.judged_on.c_str(), required.c_str(),
                  *f.threshold_ok ? "OK" : "FAILED");
  }
  out += "#\n";
  out += "# Collective test concluded: " + program + "\n";
  if (f.gpu_memory) out += render_memory_usage(*f.gpu_memory);
  out += "#\n";
  out += "\n";
  return out;
}

} // namespace fabric::nccltest
