#include "probes/cli/rdma_cli.h"

#include <cstdio>

#include "common/cli.h"
#include "common/log.h"
#include "probes/cli/commands.h"
#include "probes/rdma/rdma_probe.h"

namespace fabric::probes {
namespace {

// Values stay text until make_rdma_options() parses them with its own errors; the
// placeholder says what the value is (cli::kPlaceholders).
void text_option(CLI::App& cmd, const std::string& flags, const char* placeholder,
                 std::optional<std::string>& target, const std::string& help) {
  cmd.add_option_function<std::string>(
         flags, [&target](const std::string& value) { target = value; }, help)
      ->type_name(placeholder);
}

} // namespace

void add_rdma_flags(CLI::App& cmd, RdmaTest test, const std::shared_ptr<RdmaArgs>& args) {
  RdmaArgs& a = *args;
  const bool bw = test == RdmaTest::kBandwidth;
  cmd.add_option("HOST", a.host,
                 "The agent (`fabric-probe server`) to test against: HOST or HOST:PORT")
      ->required();
  text_option(cmd, "--op", "OP", a.op,
              bw ? "write (default), read or send" : "send (default), write or read");
  text_option(cmd, "-s,--size", "SIZE", a.size,
              std::string("Message size in bytes, K/M/G suffixes (default ") + (bw ? "64K" : "2") +
                  ")");
  text_option(cmd, "--sweep", "MIN:MAX", a.sweep,
              "Every power of two from MIN to MAX: MIN:MAX (2:64K)");
  text_option(cmd, "-n,--iters", "N", a.iters,
              std::string("Messages per queue pair and size (default ") + (bw ? "5000" : "1000") +
                  ")");
  if (bw) {
    text_option(cmd, "-D,--duration", "DURATION", a.duration,
                "Run each size for this long (10s, 500ms)");
    text_option(cmd, "-q,--qps", "N", a.qps, "Queue pairs (default 1)");
    cmd.add_flag("-b,--bidir", a.bidir, "Both directions at once (the agent sends too)");
    text_option(cmd, "-t,--tx-depth", "N", a.tx_depth,
                "Work requests in flight per queue pair (default 128)");
    text_option(cmd, "--min-bw", "GBPS", a.min_bw,
                "Exit 3 when the largest size's average is below GBPS (Gb/s)");
    text_option(cmd, "--min-bw-pct", "PCT", a.min_bw_pct,
                "Exit 3 when the average is below P percent of the port's link speed");
  }
  cmd.add_flag("--cm", a.cm, "Connect through librdmacm instead of the agent channel");
  text_option(cmd, "-x,--gid-index", "INDEX", a.gid_index,
              "This side's GID index (default: the RoCE v2 GID of the address that reaches "
              "the peer)");
  text_option(cmd, "--remote-gid-index", "INDEX", a.remote_gid_index, "The agent's GID index");
  text_option(cmd, "--tclass", "N", a.tclass, "Traffic class byte of the GRH (0-255)");
  text_option(cmd, "--dscp", "N", a.dscp, "DSCP (0-63): traffic class = DSCP << 2");
  text_option(cmd, "--sl", "N", a.sl, "Service level (0-15)");
  text_option(cmd, "-m,--mtu", "MTU", a.mtu,
              "Path MTU: 256, 512, 1024, 2048 or 4096 (default: the smaller active MTU)");
  text_option(cmd, "-d,--device", "DEVICE", a.device,
              "This side's RDMA device (default: from the route)");
  text_option(cmd, "--remote-device", "DEVICE", a.remote_device, "The agent's RDMA device");
  text_option(cmd, "-i,--ib-port", "N", a.ib_port, "This side's device port (default 1)");
  text_option(cmd, "-p,--port", "PORT", a.port, "The agent's TCP port (default 18515)");
  text_option(cmd, "--gpu", "N", a.gpu, "Buffers in the memory of CUDA device N (GPUDirect RDMA)");
  text_option(cmd, "--timeout", "DURATION", a.timeout,
              "Bound on every network step and on a stalled transfer (default 10s)");
  add_token_file_option(cmd, a.token_file);
  cmd.add_flag("--json", a.json, "Print JSON instead of text");
}

void add_token_file_option(CLI::App& cmd, std::optional<std::string>& target) {
  cmd.add_option_function<std::string>(
         "--token-file", [&target](const std::string& value) { target = value; },
         std::string("The agent's token, when it asks for one (default: $") + kTokenFileEnv + ")")
      ->type_name("FILE");
}

int run_rdma_command(RdmaTest test, const RdmaArgs& args) {
  auto options = make_rdma_options(test, args);
  if (!options.ok()) return cli::fail(kProgram, options.error());
  auto token = load_token(args.token_file);
  if (!token.ok()) return cli::fail(kProgram, token.error());
  options->token = std::move(*token);
  if (test == RdmaTest::kLatency) {
    auto report = run_rdma_lat(*options);
    if (!report.ok()) return cli::fail(kProgram, report.error());
    std::string out = options->json ? render_rdma_lat_json(*report) : render_rdma_lat_text(*report);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  }
  auto report = run_rdma_bw(*options);
  if (!report.ok()) return cli::fail(kProgram, report.error());
  std::string out = options->json ? render_rdma_bw_json(*report) : render_rdma_bw_text(*report);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  if (auto verdict = rdma_bw_verdict(*report); !verdict.ok()) {
    return cli::fail(kProgram, verdict.error());
  }
  return kExitOk;
}

} // namespace fabric::probes
