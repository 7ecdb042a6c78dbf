// fabric-probe tcp: TCP bandwidth and latency to an agent, to tell a network problem
// from an RDMA one between the same two hosts.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "common/cli.h"
#include "common/units.h"
#include "probes/agent/auth.h"
#include "probes/agent/protocol.h"
#include "probes/agent/tcp_socket.h"
#include "probes/cli/commands.h"
#include "probes/tcp/tcp_test.h"

namespace fabric::probes {
namespace {

struct TcpArgs {
  std::string host;
  std::string mode = "both";
  std::optional<std::string> port;
  std::optional<std::string> streams;
  std::optional<std::string> size;
  std::optional<std::string> duration;
  std::optional<std::string> bytes;
  std::optional<std::string> iters;
  std::optional<std::string> warmup;
  std::optional<std::string> timeout;
  std::optional<std::string> min_bw;
  std::optional<std::string> token_file;
  bool reverse = false;
  bool bidir = false;
  bool json = false;
};

struct TcpPlan {
  Endpoint agent;
  bool bandwidth = true;
  bool latency = true;
  TcpBwOptions bw;
  TcpLatOptions lat;
  std::optional<double> min_bw_gbps;
};

Result<TcpPlan> make_plan(const TcpArgs& a) {
  TcpPlan p;
  if (a.mode == "bw") {
    p.latency = false;
  } else if (a.mode == "lat") {
    p.bandwidth = false;
  } else if (a.mode != "both") {
    return Error(ErrorCode::kInvalidArgument, "--mode", "'" + a.mode + "' is not bw, lat or both");
  }
  uint16_t default_port = kDefaultAgentPort;
  if (a.port) {
    FABRIC_ASSIGN_OR_RETURN(uint64_t port, units::parse_uint(*a.port, "--port", 1, 65535));
    default_port = static_cast<uint16_t>(port);
  }
  FABRIC_ASSIGN_OR_RETURN(p.agent, parse_endpoint(a.host, default_port, "HOST"));
  if (a.streams) {
    FABRIC_ASSIGN_OR_RETURN(p.bw.streams, units::parse_uint(*a.streams, "--streams", 1, 128));
  }
  if (a.size) {
    // One --size for both tests: the write size and the ping-pong message size.
    FABRIC_ASSIGN_OR_RETURN(uint64_t size, units::parse_size(*a.size, "--size"));
    p.bw.write_size = size;
    p.lat.size = size;
  }
  if (a.duration && a.bytes) {
    return Error(ErrorCode::kInvalidArgument, "--bytes", "give either --duration or --bytes");
  }
  if (a.duration) {
    FABRIC_ASSIGN_OR_RETURN(p.bw.duration, units::parse_duration(*a.duration, "--duration"));
  }
  if (a.bytes) {
    FABRIC_ASSIGN_OR_RETURN(p.bw.bytes, units::parse_size(*a.bytes, "--bytes"));
    if (p.bw.bytes == 0) return Error(ErrorCode::kInvalidArgument, "--bytes", "must be positive");
  }
  if (a.reverse && a.bidir) {
    return Error(ErrorCode::kInvalidArgument, "--bidir", "give either --reverse or --bidir");
  }
  p.bw.direction = a.bidir     ? TcpDirection::kBidir
                   : a.reverse ? TcpDirection::kReverse
                               : TcpDirection::kForward;
  if (a.iters) {
    FABRIC_ASSIGN_OR_RETURN(p.lat.iters, units::parse_uint(*a.iters, "--iters", 1, 100'000'000));
  }
  if (a.warmup) {
    FABRIC_ASSIGN_OR_RETURN(p.lat.warmup, units::parse_uint(*a.warmup, "--warmup", 0, 100'000'000));
  }
  if (a.timeout) {
    FABRIC_ASSIGN_OR_RETURN(auto t, units::parse_duration(*a.timeout, "--timeout"));
    p.bw.timeout = p.lat.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(t);
  }
  if (a.min_bw) {
    if (!p.bandwidth) {
      return Error(ErrorCode::kInvalidArgument, "--min-bw",
                   "needs the bandwidth test (--mode bw or both)");
    }
    try {
      std::size_t used = 0;
      double v = std::stod(*a.min_bw, &used);
      if (used != a.min_bw->size() || !(v > 0)) throw std::invalid_argument("min-bw");
      p.min_bw_gbps = v;
    } catch (const std::exception&) {
      return Error(ErrorCode::kInvalidArgument, "--min-bw",
                   "'" + *a.min_bw + "' is not a positive number of Gb/s");
    }
  }
  if (p.bandwidth) FABRIC_TRY(validate(p.bw));
  if (p.latency) FABRIC_TRY(validate(p.lat));
  return p;
}

int run_tcp(const TcpArgs& args) {
  auto plan = make_plan(args);
  if (!plan.ok()) return cli::fail(kProgram, plan.error());
  const std::string& host = plan->agent.host;
  const uint16_t port = plan->agent.port;
  auto token = load_token(args.token_file);
  if (!token.ok()) return cli::fail(kProgram, token.error());
  const Token* presented = *token ? &**token : nullptr;

  std::optional<TcpBwReport> bw;
  std::optional<TcpLatReport> lat;
  if (plan->bandwidth) {
    auto report = run_tcp_bw(host, port, plan->bw, presented);
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
    if (bw && lat) {
      json::Writer w;
      w.begin_object().field("schema_version", json::kSchemaVersion).field("test", "tcp");
      w.key("tcp_bw");
      write_tcp_bw_json(w, *bw);
      w.key("tcp_lat");
      write_tcp_lat_json(w, *lat);
      w.end_object();
      out = w.str();
    } else {
      out = bw ? render_tcp_bw_json(*bw) : render_tcp_lat_json(*lat);
    }
  } else {
    if (bw) out += render_tcp_bw_text(*bw);
    if (lat) out += render_tcp_lat_text(*lat);
  }
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);

  if (bw && plan->min_bw_gbps && bw->avg_gbps() < *plan->min_bw_gbps) {
    char detail[160];
    std::snprintf(detail, sizeof detail, "%.3f Gb/s is below --min-bw %g Gb/s", bw->avg_gbps(),
                  *plan->min_bw_gbps);
    return cli::fail(kProgram, Error(ErrorCode::kBelowThreshold,
                                     "tcp bandwidth to " + format_endpoint(plan->agent), detail));
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
