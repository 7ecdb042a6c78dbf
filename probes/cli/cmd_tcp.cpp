// fabric-probe tcp: TCP bandwidth and latency to an agent, to tell a network problem
// from an RDMA one between the same two hosts.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "common/cli.h"
#include "probes/cli/commands.h"
#include "probes/tcp/tcp_args.h"
#include "probes/tcp/tcp_test.h"

namespace fabric::probes {
namespace {

int run_tcp(const TcpArgs& args) {
  auto plan = make_tcp_plan(args);
  if (!plan.ok()) return cli::fail(kProgram, plan.error());
  const std::string& host = plan->agent.host;
  const uint16_t port = plan->agent.port;
  const Token* presented = plan->token ? &*plan->token : nullptr;

  std::optional<TcpBwReport> bw;
  std::optional<TcpLatReport> lat;
  // On a terminal, a line a second as the test runs, as iperf3 prints them; a pipe or a
  // file gets the report only, and --json nothing but its document.
  TcpIntervalReporting intervals;
  if (!args.json && ::isatty(STDOUT_FILENO)) {
    intervals.report = [](const TcpInterval& interval) {
      std::fputs(render_tcp_interval_text(interval).c_str(), stdout);
      std::fflush(stdout);
    };
  }
  if (plan->bandwidth) {
    auto report = run_tcp_bw(host, port, plan->bw, presented, intervals);
    if (!report.ok()) return cli::fail(kProgram, report.error());
    bw = std::move(*report);
  }
  if (plan->latency) {
    auto report = run_tcp_lat(host, port, plan->lat, presented);
    if (!report.ok()) return cli::fail(kProgram, report.error());
    lat = std::move(*report);
  }

  std::string out;
  if (args.json) {
    out = render_tcp_json(bw ? &*bw : nullptr, lat ? &*lat : nullptr);
  } else {
    if (bw) out += render_tcp_bw_text(*bw);
    if (lat) out += render_tcp_lat_text(*lat);
  }
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);

  if (auto verdict = tcp_verdict(*plan, bw ? &*bw : nullptr); !verdict.ok()) {
    return cli::fail(kProgram, verdict.error());
  }
  return kExitOk;
}

} // namespace

Subcommand add_tcp_command(CLI::App& app) {
  auto args = std::make_shared<TcpArgs>();
  auto* cmd = app.add_subcommand(
      "tcp", "TCP bandwidth and latency to an agent: is it the network, or RDMA?");
  cmd->add_option("HOST", args->host, "The agent (`fabric-probe server`): HOST or HOST:PORT")
      ->required();
  cmd->add_option("--mode", args->mode, "bw, lat or both (default both)")->type_name("MODE");
  cmd->add_option("-p,--port", args->port, "The agent's port (default 18515)")->type_name("PORT");
  cmd->add_option("-P,--streams", args->streams, "Parallel bandwidth connections (default 1)")
      ->type_name("N");
  cmd->add_option("-s,--size", args->size,
                  "Write size for bandwidth (default 128K), message size for latency "
                  "(default 1); K/M/G suffixes")
      ->type_name("SIZE");
  cmd->add_option("-D,--duration", args->duration, "Bandwidth test length (default 10s)")
      ->type_name("DURATION");
  cmd->add_option("--bytes", args->bytes,
                  "Send this much in total instead of running for a duration")
      ->type_name("SIZE");
  cmd->add_flag("-R,--reverse", args->reverse, "The agent sends, this side receives");
  cmd->add_flag("--bidir", args->bidir, "Both directions at once");
  cmd->add_option("-n,--iters", args->iters, "Latency round trips (default 1000)")->type_name("N");
  cmd->add_option("--warmup", args->warmup, "Untimed round trips first (default 100)")
      ->type_name("N");
  cmd->add_option("--timeout", args->timeout,
                  "Bound on connecting and on a stalled transfer (default 10s)")
      ->type_name("DURATION");
  cmd->add_option("--min-bw", args->min_bw,
                  "Exit 3 when the received bandwidth is below GBPS (Gb/s)")
      ->type_name("GBPS");
  add_token_file_option(*cmd, args->token_file);
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  return {cmd, [args] { return run_tcp(*args); }};
}

} // namespace fabric::probes
