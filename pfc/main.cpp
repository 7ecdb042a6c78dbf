// fabric-pfc: lossless Ethernet for RoCE over DCB netlink. This file parses arguments and
// renders; the work is in the fabric_pfc library.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <net/if.h>
#include <string>

#include "common/cli.h"
#include "pfc/dcb_netlink.h"
#include "pfc/dcb_report.h"

namespace {

constexpr const char* kProgram = "fabric-pfc";

std::atomic<bool> g_stop{false};
extern "C" void request_stop(int) { g_stop = true; }

struct ShowOptions {
  std::string dev;
  bool json = false;
};

struct WatchOptions {
  std::string dev;
  bool json = false;
  int count = 0;  // stop after this many events; 0 = until interrupted
};

int run_show(const ShowOptions& o) {
  auto device = fabric::pfc::make_netlink_dcb_device();
  auto state = device->read(o.dev);
  if (!state.ok()) return fabric::cli::fail(kProgram, state.error());
  std::string out = o.json ? fabric::pfc::render_state_json(o.dev, *state)
                           : fabric::pfc::render_state_text(o.dev, *state);
  std::fputs(out.c_str(), stdout);
  return fabric::kExitOk;
}

int run_watch(const WatchOptions& o) {
  // A device that does not exist can never send an event: say so now rather than wait.
  if (!o.dev.empty() && if_nametoindex(o.dev.c_str()) == 0) {
    return fabric::cli::fail(
        kProgram, fabric::Error::from_errno(ENODEV, "watch").with_context("no network device " + o.dev));
  }
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  int seen = 0;
  std::fprintf(stderr, "%s: watching DCB changes on %s (Ctrl-C to stop)\n", kProgram,
               o.dev.empty() ? "every device" : o.dev.c_str());
  auto watched = fabric::pfc::watch_dcb(
      o.dev,
      [&](const fabric::pfc::DcbEvent& e) {
        std::string out;
        if (o.json) {
          // One JSON document per line: compact the pretty report.
          out = fabric::pfc::render_state_json(e.dev, e.state);
          std::string line;
          bool in_string = false;
          for (char c : out) {
            if (c == '"') in_string = !in_string;
            if (!in_string && (c == '\n' || c == ' ')) continue;
            line += c;
          }
          out = line + "\n";
        } else {
          out = "changed: " + fabric::pfc::render_state_text(e.dev, e.state);
        }
        std::fputs(out.c_str(), stdout);
        std::fflush(stdout);
        return o.count == 0 || ++seen < o.count;
      },
      [] { return !g_stop.load(); });
  if (!watched.ok()) return fabric::cli::fail(kProgram, watched.error());
  return fabric::kExitOk;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabric-pfc: lossless Ethernet (PFC, ETS, DSCP, ECN) for RoCE over DCB netlink",
               kProgram};
  fabric::cli::CommonOptions common;
  fabric::cli::add_common_options(app, kProgram, common);
  app.require_subcommand(1);

  ShowOptions show;
  auto* cmd_show = app.add_subcommand(
      "show", "Show PFC, ETS, the APP table, buffers, max rates, DCBX and the peer's TLVs");
  cmd_show->add_option("DEV", show.dev, "Network device")->required();
  cmd_show->add_flag("--json", show.json, "Print JSON (iproute2 dcb -j key names)");

  WatchOptions watch;
  auto* cmd_watch = app.add_subcommand(
      "watch", "Report every DCB change made by anyone (lldpad, firmware DCBX, other tools)");
  cmd_watch->add_option("DEV", watch.dev, "Network device (default: every device)");
  cmd_watch->add_flag("--json", watch.json, "One JSON document per line");
  cmd_watch->add_option("--count", watch.count, "Stop after this many changes")
      ->check(CLI::NonNegativeNumber);

  if (auto status = fabric::cli::parse(app, kProgram, common, argc, argv)) return *status;
  if (cmd_show->parsed()) return run_show(show);
  if (cmd_watch->parsed()) return run_watch(watch);
  return fabric::kExitUsage;
}
