// fabric-probe mesh: every pair of hosts, through their agents, as a matrix with the
// outliers flagged.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "common/atomic_file.h"
#include "common/cli.h"
#include "common/units.h"
#include "probes/agent/auth.h"
#include "probes/agent/protocol.h"
#include "probes/cli/commands.h"
#include "probes/mesh/mesh.h"

namespace fabric::probes {
namespace {

struct MeshArgs {
  std::string hosts;
  std::string tests = "rdma_bw,rdma_lat";
  std::optional<std::string> port;
  std::optional<std::string> duration;
  std::optional<std::string> size;
  std::optional<std::string> iters;
  std::optional<std::string> streams;
  std::optional<std::string> params;
  std::optional<std::string> pair_timeout;
  std::optional<std::string> outlier_threshold;
  std::optional<std::string> token_file;
  std::string csv;
  std::string heatmap;
  bool no_retest = false;
  bool json = false;
};

Result<double> parse_positive(const std::string& text, const char* what) {
  try {
    std::size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  return Error(ErrorCode::kInvalidArgument, what, "'" + text + "' is not a positive number");
}

Result<MeshOptions> make_options(const MeshArgs& a) {
  MeshOptions o;
  uint16_t default_port = kDefaultAgentPort;
  if (a.port) {
    FABRIC_ASSIGN_OR_RETURN(uint64_t port, units::parse_uint(*a.port, "--port", 1, 65535));
    default_port = static_cast<uint16_t>(port);
  }
  FABRIC_ASSIGN_OR_RETURN(o.hosts, load_mesh_hosts(a.hosts, default_port));

  MeshTestSettings s;
  if (a.duration) {
    FABRIC_ASSIGN_OR_RETURN(auto d, units::parse_duration(*a.duration, "--duration"));
    s.duration_s = units::seconds(d);
    if (!(*s.duration_s > 0)) {
      return Error(ErrorCode::kInvalidArgument, "--duration", "must be positive");
    }
  } else {
    s.duration_s = 3.0; // a mesh has many pairs: shorter than a single test's 10 s
  }
  if (a.size) {
    FABRIC_ASSIGN_OR_RETURN(s.size, units::parse_size(*a.size, "--size"));
  }
  if (a.iters) {
    FABRIC_ASSIGN_OR_RETURN(s.iters, units::parse_uint(*a.iters, "--iters", 1));
  }
  if (a.streams) {
    FABRIC_ASSIGN_OR_RETURN(s.streams, units::parse_uint(*a.streams, "--streams", 1, 128));
  }
  if (a.params) s.extra_params_json = *a.params;

  std::string_view rest = a.tests;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string name(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    if (name.empty()) continue;
    FABRIC_ASSIGN_OR_RETURN(MeshTest test, make_mesh_test(name, s));
    o.tests.push_back(std::move(test));
  }
  if (o.tests.empty()) return Error(ErrorCode::kInvalidArgument, "--test", "names no test");

  if (a.pair_timeout) {
    FABRIC_ASSIGN_OR_RETURN(auto t, units::parse_duration(*a.pair_timeout, "--pair-timeout"));
    o.pair_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(t);
  } else {
    // Enough for the test itself plus connection set-up and a slow agent.
    o.pair_timeout = std::chrono::milliseconds(static_cast<int64_t>(*s.duration_s * 1000)) +
                     std::chrono::seconds(60);
  }
  if (o.pair_timeout.count() < 1000 ||
      o.pair_timeout.count() <= static_cast<int64_t>(*s.duration_s * 1000)) {
    return Error(ErrorCode::kInvalidArgument, "--pair-timeout",
                 "must be at least 1 s and longer than --duration");
  }
  if (a.outlier_threshold) {
    FABRIC_ASSIGN_OR_RETURN(o.outlier_threshold,
                            parse_positive(*a.outlier_threshold, "--outlier-threshold"));
  }
  o.retest = !a.no_retest;
  FABRIC_ASSIGN_OR_RETURN(o.token, load_token(a.token_file));
  return o;
}

// "\r rdma_bw: round 3/7, pair a -> b" on a terminal, overwritten as the mesh advances.
MeshProgressFn terminal_progress() {
  if (!::isatty(STDERR_FILENO)) return {};
  return [](const MeshProgress& p) {
    std::fprintf(stderr, "\r\033[K %s: %s %zu/%zu, pair %s -> %s", p.test->name.c_str(),
                 p.retest ? "retest" : "round", p.round, p.rounds, p.source->name.c_str(),
                 p.destination->name.c_str());
    std::fflush(stderr);
  };
}

int run_mesh_command(const MeshArgs& args) {
  auto options = make_options(args);
  if (!options.ok()) return cli::fail(kProgram, options.error());
  MeshProgressFn progress = terminal_progress();
  auto reports = run_mesh(*options, progress);
  if (progress) std::fputs("\r\033[K", stderr);
  if (!reports.ok()) return cli::fail(kProgram, reports.error());

  const bool several = reports->size() > 1;
  for (const auto& r : *reports) {
    if (!args.csv.empty()) {
      std::string path = per_test_path(args.csv, r.metric, several);
      if (auto w = write_file_atomic(path, render_mesh_csv(r)); !w.ok()) {
        return cli::fail(kProgram, std::move(w).error().with_context("--csv"));
      }
    }
    if (!args.heatmap.empty()) {
      std::string path = per_test_path(args.heatmap, r.metric, several);
      if (auto w = write_file_atomic(path, render_mesh_svg(r)); !w.ok()) {
        return cli::fail(kProgram, std::move(w).error().with_context("--heatmap"));
      }
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

  std::size_t failed = 0, flagged = 0;
  for (const auto& r : *reports) {
    failed += r.failures.size();
    flagged += r.outliers.cells.size() + r.outliers.hosts.size();
  }
  if (failed > 0) {
    return cli::fail(kProgram, Error(ErrorCode::kSystem, "mesh",
                                     std::to_string(failed) + " pairs without a result"));
  }
  if (flagged > 0) {
    return cli::fail(kProgram, Error(ErrorCode::kBelowThreshold, "mesh",
                                     std::to_string(flagged) + " outliers flagged"));
  }
  return kExitOk;
}

} // namespace

Subcommand add_mesh_command(CLI::App& app) {
  auto args = std::make_shared<MeshArgs>();
  auto* cmd = app.add_subcommand(
      "mesh", "Test every pair of hosts through their agents in contention-free rounds; print the "
              "matrix and flag outliers. Exit 2 when a pair had no result, 3 when outliers were "
              "flagged.");
  cmd->add_option("--hosts", args->hosts,
                  "A file with one HOST or HOST:PORT per line ('#' comments), or a "
                  "comma-separated list")
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
