// fabric-probe server: the agent every other probe talks to (one per node, e.g. from a
// DaemonSet). Serves until SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "common/cli.h"
#include "common/log.h"
#include "probes/agent/agent.h"
#include "probes/agent/server_args.h"
#include "probes/cli/commands.h"
#include "probes/rdma/rdma_probe.h"
#include "probes/tcp/tcp_test.h"

namespace fabric::probes {
namespace {

// The agent the signal handler stops; request_stop() is async-signal-safe.
Agent* g_agent = nullptr;

extern "C" void on_stop_signal(int) {
  if (g_agent != nullptr) g_agent->request_stop();
}

Result<void> install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM}) {
    if (::sigaction(signal, &action, nullptr) != 0) return Error::from_errno(errno, "sigaction");
  }
  // A client that vanishes must cost an EPIPE, never the process.
  std::signal(SIGPIPE, SIG_IGN);
  return Ok();
}

int run_server(const ServerArgs& args, const CLI::App& root) {
  auto options = make_agent_options(args);
  if (!options.ok()) return cli::fail(kProgram, options.error());
  // The agent's session lines are its access log: shown unless the user chose a level.
  if (root.get_option("--log-level")->count() == 0 && std::getenv(log::kLevelEnv) == nullptr) {
    spdlog::set_level(spdlog::level::info);
  }

  Agent agent(*options);
  register_tcp_tests(agent);
  register_rdma_tests(agent);

  if (auto listening = agent.listen(); !listening.ok()) {
    return cli::fail(kProgram, listening.error());
  }
  g_agent = &agent;
  if (auto installed = install_signal_handlers(); !installed.ok()) {
    return cli::fail(kProgram, installed.error());
  }
  std::printf("listening on %s\n", agent.listen_address().c_str());
  std::fflush(stdout);
  if (!args.port_file.empty()) {
    auto written = write_file_atomic(args.port_file, std::to_string(agent.port()) + "\n");
    if (!written.ok())
      return cli::fail(kProgram, std::move(written).error().with_context("--port-file"));
  }
  auto served = agent.serve();
  g_agent = nullptr;
  if (!served.ok()) return cli::fail(kProgram, served.error());
  spdlog::info("stopped");
  return kExitOk;
}

} // namespace

Subcommand add_server_command(CLI::App& app) {
  auto args = std::make_shared<ServerArgs>();
  auto* cmd = app.add_subcommand(
      "server", "Run the agent that the probes (bw, lat, tcp, mesh) test against; one per node");
  cmd->add_option("--bind", args->bind,
                  "Address to listen on (default: every address, IPv6 and IPv4)")
      ->type_name("ADDR");
  cmd->add_option("-p,--port", args->port,
                  "TCP port (default 18515; 0 picks a free one, printed on the first line)")
      ->type_name("PORT");
  cmd->add_option("--max-sessions", args->max_sessions,
                  "Tests served at once; more clients are told 'busy' (default 16)")
      ->type_name("N");
  cmd->add_option("--handshake-timeout", args->handshake_timeout,
                  "Drop a client that has not said hello within this time (default 10s)")
      ->type_name("DURATION");
  cmd->add_option("--stop-grace", args->stop_grace,
                  "On SIGINT/SIGTERM, let running tests end for this long (default 10s)")
      ->type_name("DURATION");
  cmd->add_option("--port-file", args->port_file,
                  "Once listening, write the port number to this file (atomically)")
      ->type_name("PATH");
  cmd->add_option("--allow", args->allow,
                  "Accept clients only from this network (10.0.0.0/8, fd00::/64, a single "
                  "address); repeat for more. Default: every address")
      ->type_name("CIDR");
  cmd->add_option("--token-file", args->token_file,
                  std::string("Require clients to prove they hold the token in FILE (a "
                              "Kubernetes Secret mounted as a file; surrounding whitespace "
                              "ignored); also presented to other agents for mesh tests. "
                              "Default: $") +
                      kTokenFileEnv)
      ->type_name("FILE");
  cmd->add_option("--max-client-sessions", args->max_client_sessions,
                  "Tests one client address may run at once (default 4)")
      ->type_name("N");
  cmd->add_option("--max-message-size", args->max_message_size,
                  "Largest RDMA message or TCP write a client may ask for (default 64M)")
      ->type_name("SIZE");
  cmd->add_option("--max-client-memory", args->max_client_memory,
                  "Buffers all of one client's running tests may hold together (default 1G)")
      ->type_name("SIZE");
  cmd->add_option("--max-session-duration", args->max_session_duration,
                  "Refuse longer tests, and cut any test still running after this (default 10m)")
      ->type_name("DURATION");
  return {cmd, [args, &app] { return run_server(*args, app); }};
}

} // namespace fabric::probes
