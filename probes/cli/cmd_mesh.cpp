// fabric-probe mesh: every pair of hosts, through their agents, as a matrix with the
// outliers flagged.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "common/atomic_file.h"
#include "common/cli.h"
#include "probes/cli/commands.h"
#include "probes/mesh/mesh.h"
#include "probes/mesh/mesh_args.h"
#include "probes/mesh/pattern_report.h"

namespace fabric::probes {
namespace {

// "\r rdma_bw: round 3/7, pair a -> b" on a terminal, overwritten as the mesh advances.
MeshProgressFn terminal_progress() {
  if (!::isatty(STDERR_FILENO)) return {};
  return [](const MeshProgress& p) {
    std::fprintf(stderr, "\r\033[K %s: %s %zu/%zu, pair %s -> %s", p.test->name.c_str(),
                 p.retest ? "retest or follow-up" : "round", p.round, p.rounds,
                 p.source->name.c_str(), p.destination->name.c_str());
    std::fflush(stderr);
  };
}

int write_output(const std::string& path, const std::string& content, const char* flag) {
  if (auto w = write_file_atomic(path, content); !w.ok()) {
    return cli::fail(kProgram, std::move(w).error().with_context(flag));
  }
  return kExitOk;
}

int run_pattern_command(const MeshArgs& args, const MeshOptions& options,
                        const MeshProgressFn& progress) {
  auto reports = run_pattern_mesh(options, progress);
  if (progress) std::fputs("\r\033[K", stderr);
  if (!reports.ok()) return cli::fail(kProgram, reports.error());
  const bool several = reports->size() > 1;
  for (const auto& r : *reports) {
    if (!args.csv.empty()) {
      int rc =
          write_output(per_test_path(args.csv, r.metric, several), render_pattern_csv(r), "--csv");
      if (rc != kExitOk) return rc;
    }
    if (!args.heatmap.empty()) {
      int rc = write_output(per_test_path(args.heatmap, r.metric, several), render_pattern_svg(r),
                            "--heatmap");
      if (rc != kExitOk) return rc;
    }
  }
  std::string out;
  if (args.json) {
    out = render_pattern_reports_json(*reports);
  } else {
    for (const auto& r : *reports)
      out += render_pattern_text(r) + "\n";
  }
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  if (auto verdict = pattern_verdict(*reports); !verdict.ok()) {
    return cli::fail(kProgram, verdict.error());
  }
  return kExitOk;
}

int run_mesh_command(const MeshArgs& args) {
  auto options = make_mesh_options(args);
  if (!options.ok()) return cli::fail(kProgram, options.error());
  MeshProgressFn progress = terminal_progress();
  if (options->pattern) return run_pattern_command(args, *options, progress);
  auto reports = run_mesh(*options, progress);
  if (progress) std::fputs("\r\033[K", stderr);
  if (!reports.ok()) return cli::fail(kProgram, reports.error());

  const bool several = reports->size() > 1;
  for (const auto& r : *reports) {
    if (!args.csv.empty()) {
      std::string path = per_test_path(args.csv, r.metric, several);
      if (int rc = write_output(path, render_mesh_csv(r), "--csv"); rc != kExitOk) return rc;
    }
    if (!args.heatmap.empty()) {
      std::string path = per_test_path(args.heatmap, r.metric, several);
      if (int rc = write_output(path, render_mesh_svg(r), "--heatmap"); rc != kExitOk) return rc;
    }
  }
  std::string out;
  if (args.json) {
    out = render_mesh_reports_json(*reports);
  } else {
    for (const auto& r : *reports)
      out += render_mesh_text(r) + "\n";
  }
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);

  if (auto verdict = mesh_verdict(*reports); !verdict.ok()) {
    return cli::fail(kProgram, verdict.error());
  }
  return kExitOk;
}

} // namespace

Subcommand add_mesh_command(CLI::App& app) {
  auto args = std::make_shared<MeshArgs>();
  auto* cmd = app.add_subcommand(
      "mesh", "Test every pair of hosts through their agents in contention-free rounds, or a "
              "--pattern and follow-up rounds that name the slow node, uplink or path; print the "
              "matrix or the verdict. Exit 2 when a pair had no result, 3 when outliers or a "
              "fault were found.");
  cmd->add_option("--hosts", args->hosts,
                  "A file with one HOST[:PORT] [leaf=NAME] [rail=NAME] [spine=NAME] per line "
                  "('#' comments), or a comma-separated list")
      ->required()
      ->type_name("FILE|LIST");
  cmd->add_option("--test", args->tests,
                  "Comma-separated tests: tcp_bw, tcp_lat, rdma_bw, rdma_lat "
                  "(default rdma_bw,rdma_lat)")
      ->type_name("LIST");
  cmd->add_option("-p,--port", args->port, "Agent port for hosts given without one (18515)")
      ->type_name("PORT");
  cmd->add_option("-D,--duration", args->duration, "Each bandwidth pair's length (default 3s)")
      ->type_name("DURATION");
  cmd->add_option("-s,--size", args->size, "Message or write size (default: each test's)")
      ->type_name("SIZE");
  cmd->add_option("-n,--iters", args->iters, "Latency iterations per pair (default: the test's)")
      ->type_name("N");
  cmd->add_option("-P,--streams", args->streams,
                  "TCP streams or RDMA queue pairs per bandwidth pair")
      ->type_name("N");
  cmd->add_option("--params", args->params,
                  "A JSON object merged into every test's parameters, e.g. "
                  "'{\"gid_index\":3}'")
      ->type_name("JSON");
  cmd->add_option("--pair-timeout", args->pair_timeout,
                  "Give up on a pair after this long (default: duration + 60s)")
      ->type_name("DURATION");
  cmd->add_option("--outlier-threshold", args->outlier_threshold,
                  "Flag cells worse than their row and column medians by this many MADs "
                  "(default 3.5)")
      ->type_name("X");
  cmd->add_flag("--no-retest", args->no_retest, "Do not measure flagged pairs a second time");
  cmd->add_option("--pattern", args->pattern,
                  "Instead of all pairs: ring, leaf-local, cross-leaf[:K], random[:K] or "
                  "all-pairs, then follow-up rounds that name the fault")
      ->type_name("PATTERN");
  cmd->add_option("--seed", args->seed, "The random pattern's seed (default 1)")->type_name("N");
  cmd->add_flag("--no-narrow", args->no_narrow,
                "With --pattern: judge the pattern alone, run no follow-up round");
  cmd->add_option("--low", args->low,
                  "With --pattern: a result this many percent worse than the median is low "
                  "(default 20)")
      ->type_name("PCT");
  cmd->add_option("--parallel", args->parallel,
                  "Pairs running at a time (default 256); a slow host holds up only its own")
      ->type_name("N");
  add_token_file_option(*cmd, args->token_file);
  cmd->add_flag("--json", args->json, "Print JSON instead of the text matrix");
  cmd->add_option("--csv", args->csv,
                  "Also write the matrix as CSV (with several tests: FILE-<test>.csv)")
      ->type_name("FILE");
  cmd->add_option("--heatmap", args->heatmap,
                  "Also write an SVG heatmap (with several tests: FILE-<test>.svg)")
      ->type_name("FILE");
  return {cmd, [args] { return run_mesh_command(*args); }};
}

} // namespace fabric::probes
