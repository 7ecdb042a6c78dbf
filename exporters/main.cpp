// fabric-exporter: Prometheus metrics for RDMA ports, PFC pause, DCB state, per-pod traffic
// and textfiles. This file parses arguments and handles signals; the work is in the
// fabric_exporters library.
#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <pthread.h>

#include "common/cli.h"
#include "common/log.h"
#include "exporters/accounting.h"
#include "exporters/config.h"
#include "exporters/exporter.h"
#include "exporters/exposition.h"
#include "exporters/http_server.h"

namespace {

constexpr const char* kProgram = "fabric-exporter";

struct Options {
  std::string config_path;
  std::string listen;
  bool check_config = false;
  bool once = false;
  bool cleanup = false;
};

fabric::Result<fabric::exporters::Config> load(const Options& o) {
  using namespace fabric::exporters;
  Config config = default_config();
  if (!o.config_path.empty()) {
    FABRIC_ASSIGN_OR_RETURN(config, load_config(o.config_path));
  }
  if (!o.listen.empty()) {
    FABRIC_TRY(parse_listen_address(o.listen));
    config.http.listen = o.listen;
  }
  return config;
}

// "127.0.0.1:0" bound to 43017 -> "127.0.0.1:43017"; ":10900" -> "0.0.0.0:10900" (every
// IPv4 address); "[::1]:0" -> "[::1]:43017".
std::string listening_address(const std::string& listen, int port) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.empty()) host = "0.0.0.0";
  return host + ":" + std::to_string(port);
}

// SIGHUP reloads, SIGINT and SIGTERM stop. The signals are blocked in every thread (the
// mask is inherited by the HTTP server's threads and the collectors') and taken here with sigwait.
int serve(fabric::exporters::Exporter& exporter, const Options& o, const sigset_t& signals) {
  using namespace fabric::exporters;
  auto server = HttpServer::start(exporter.config().http, [&] { return exporter.scrape(); });
  if (!server.ok()) return fabric::cli::fail(kProgram, server.error());
  // Said whatever the log level, as node_exporter does, with the port really bound: with
  // port 0 it is the only way to learn it.
  auto ports = (*server)->ports();
  std::fprintf(
      stderr, "%s: listening on %s\n", kProgram,
      listening_address(exporter.config().http.listen, ports.empty() ? 0 : ports.front()).c_str());
  while (true) {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) continue;
    if (signal != SIGHUP) {
      spdlog::info("signal {}: stopping", signal);
      return 0;
    }
    if (o.config_path.empty()) {
      spdlog::warn("SIGHUP: no --config to reload");
      continue;
    }
    auto reloaded = exporter.reload(o.config_path);
    if (reloaded.ok()) {
      spdlog::info("configuration reloaded from {}", o.config_path);
    } else {
      fabric::log::report_error(kProgram, reloaded.error());
    }
  }
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabric-exporter: Prometheus metrics for RDMA ports, PFC pause, DCB state, "
               "per-pod traffic classes and textfiles",
               kProgram};
  fabric::cli::CommonOptions common;
  fabric::cli::add_common_options(app, kProgram, common);
  Options o;
  app.add_option("--config", o.config_path, "YAML configuration (see exporters/README.md)");
  app.add_option("--listen", o.listen,
                 "ADDR:PORT, [IPV6]:PORT or :PORT to serve /metrics on (default :" +
                     std::to_string(fabric::exporters::kDefaultPort) + ")");
  app.add_flag("--check-config", o.check_config, "Validate the configuration and exit");
  app.add_flag("--once", o.once, "Print one scrape on stdout and exit (no HTTP)");
  app.add_flag("--cleanup", o.cleanup,
               "Remove every chain, rule and ip set of the per-pod accounting, then exit");
  if (auto status = fabric::cli::parse(app, kProgram, common, argc, argv)) return *status;

  if (o.cleanup) {
    auto removed = fabric::exporters::cleanup_accounting();
    if (!removed.ok()) return fabric::cli::fail(kProgram, removed.error());
    std::fputs(removed->c_str(), stdout);
    return 0;
  }
  auto config = load(o);
  if (!config.ok()) {
    // Whatever kept it from loading (a missing file included), a configuration that cannot
    // be used at start is a usage error: exit 1, as documented.
    fabric::cli::fail(kProgram, config.error());
    return fabric::kExitUsage;
  }
  if (o.check_config) {
    std::printf("%s: configuration is valid\n",
                o.config_path.empty() ? "defaults" : o.config_path.c_str());
    return 0;
  }

  // A scrape builds and frees megabytes (families and text: about 5 MB at 20,000 series).
  // Handing them back to the system after every scrape made the next one fault every page
  // in again, a third of its time. They are kept instead, in one arena (the scrapes run
  // on several threads, one at a time, and an arena each would keep a copy each): the
  // resident size then stays at one scrape's peak.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024); // glibc's largest
  mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  fabric::exporters::Exporter exporter(std::move(*config));
  if (o.once) {
    std::string text = fabric::exporters::render_text(exporter.scrape());
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  return serve(exporter, o, signals);
}
