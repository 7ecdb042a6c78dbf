// fabric-pfc: lossless Ethernet for RoCE over DCB netlink. This file parses arguments and
// renders; the work is in the fabric_pfc library.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <net/if.h>
#include <string>

#include "common/cli.h"
#include "common/json.h"
#include "common/log.h"
#include "pfc/apply.h"
#include "libs/dcb/dcb_netlink.h"
#include "pfc/dcb_report.h"
#include "pfc/profile.h"
#include "pfc/profile_run.h"
#include "pfc/set_request.h"

namespace {

constexpr const char* kProgram = "fabric-pfc";

std::atomic<bool> g_stop{false};
extern "C" void request_stop(int) {
  g_stop = true;
}

struct ShowOptions {
  std::string dev;
  bool json = false;
};

struct WatchOptions {
  std::string dev;
  bool json = false;
  int count = 0; // stop after this many events; 0 = until interrupted
};

struct ProfileOptions {
  std::vector<std::string> devs;
  std::string profile;
  std::string root = "/"; // where sysfs/configfs live; tests point it elsewhere
  bool json = false;
};

struct SetOptions {
  std::string dev;
  bool json = false;
  std::string root = "/";
  fabric::pfc::SetRequest request;
};

// Runs plan, apply or verify for every device. Exit status: the worst of the devices', in
// this order: 2 for a kernel error, 3 for drift (verify) or a profile not fully applied
// (apply), 4 for a device without DCB or a part the host does not expose.
int run_profile(fabric::pfc::ProfileCommand command, const ProfileOptions& o) {
  using namespace fabric::pfc;
  auto profile = load_profile(o.profile);
  if (!profile.ok()) return fabric::cli::fail(kProgram, profile.error());
  std::vector<std::string> devs = o.devs.empty() ? profile->devices : o.devs;
  if (devs.empty()) {
    return fabric::cli::fail(
        kProgram,
        fabric::Error(fabric::ErrorCode::kInvalidArgument, "DEV", o.profile + " names no device")
            .with_hint(std::string("name them after the profile (fabric-pfc ") +
                       (command == ProfileCommand::kPlan    ? "plan"
                        : command == ProfileCommand::kApply ? "apply"
                                                            : "verify") +
                       " -p " + o.profile +
                       " eth0 eth1), or add a line 'devices: [eth0, eth1]' to " + o.profile));
  }
  auto device = make_netlink_dcb_device();
  HostKnobs knobs(o.root);
  ProfileRun run = fabric::pfc::run_profile(command, *device, knobs, devs, profile->config);
  for (const auto& d : run.devices) {
    if (d.failure) fabric::log::report_error(kProgram, *d.failure);
    if (d.verdict) fabric::log::report_error(kProgram, *d.verdict);
  }
  if (o.json) {
    auto out = render_profile_run_json(profile->name, run);
    if (!out.ok()) return fabric::cli::fail(kProgram, out.error());
    std::fputs(out->c_str(), stdout);
  } else {
    std::fputs(render_profile_run_text(run).c_str(), stdout);
  }
  return run.exit_status();
}

int run_set(const SetOptions& o) {
  using namespace fabric::pfc;
  if (o.request.empty()) {
    return fabric::cli::fail(kProgram, fabric::Error(fabric::ErrorCode::kInvalidArgument, "set",
                                                     "nothing to change (see set --help)"));
  }
  if (auto checked = check_set_request(o.request); !checked.ok()) {
    return fabric::cli::fail(kProgram, checked.error());
  }
  auto device = make_netlink_dcb_device();
  auto current = device->read(o.dev);
  if (!current.ok()) return fabric::cli::fail(kProgram, current.error());
  auto desired = desired_from_set(o.request, *current);
  if (!desired.ok()) return fabric::cli::fail(kProgram, desired.error());
  HostKnobs knobs(o.root);
  auto report = apply_profile(*device, knobs, o.dev, *desired);
  if (!report.ok()) return fabric::cli::fail(kProgram, report.error());
  std::string out = o.json ? render_apply_json(*report) : render_apply_text(*report);
  std::fputs(out.c_str(), stdout);
  if (report->dcb_write_error) return fabric::kExitSystem;
  return report->fully_applied() ? fabric::kExitOk : fabric::kExitBelowThreshold;
}

int run_show(const ShowOptions& o) {
  auto device = fabric::pfc::make_netlink_dcb_device();
  auto state = device->read(o.dev);
  if (!state.ok()) {
    // As plan --json does: a script reading stdout gets a document saying what failed.
    if (o.json) std::fputs(fabric::pfc::render_error_json(o.dev, state.error()).c_str(), stdout);
    return fabric::cli::fail(kProgram, state.error());
  }
  std::string out = o.json ? fabric::pfc::render_state_json(o.dev, *state)
                           : fabric::pfc::render_state_text(o.dev, *state);
  std::fputs(out.c_str(), stdout);
  return fabric::kExitOk;
}

int run_watch(const WatchOptions& o) {
  // A device that does not exist can never send an event: say so now rather than wait.
  if (!o.dev.empty() && if_nametoindex(o.dev.c_str()) == 0) {
    return fabric::cli::fail(
        kProgram,
        fabric::Error::from_errno(ENODEV, "watch").with_context("no network device " + o.dev));
  }
  // Nor can a device without DCB: its driver never sends a DCB notification.
  if (!o.dev.empty()) {
    auto device = fabric::pfc::make_netlink_dcb_device();
    if (auto state = device->read(o.dev);
        !state.ok() && state.error().code() == fabric::ErrorCode::kUnsupported) {
      return fabric::cli::fail(
          kProgram, std::move(state).error().with_context("no DCB change can come from " + o.dev +
                                                          ", so nothing to watch"));
    }
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
          out = fabric::pfc::render_state_json(e.dev, e.state, /*pretty=*/false);
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

  SetOptions set;
  auto* cmd_set = app.add_subcommand(
      "set", "Change PFC, ETS or DSCP mapping in place (read-modify-write, then read back)");
  cmd_set->add_option("DEV", set.dev, "Network device")->required();
  cmd_set->add_option("--prio-pfc", set.request.prio_pfc, "PRIO:on|off (PRIO may be 'all')");
  cmd_set->add_option("--pfc-delay", set.request.pfc_delay, "PFC delay allowance, bit times");
  cmd_set->add_option("--willing", set.request.ets_willing, "ETS willing: true or false");
  cmd_set->add_option("--prio-tc", set.request.prio_tc, "PRIO:TC");
  cmd_set->add_option("--tc-bw", set.request.tc_bw, "TC:PERCENT (ETS shares)");
  cmd_set->add_option("--tc-tsa", set.request.tc_tsa, "TC:strict|cbs|ets|vendor");
  cmd_set->add_option("--dscp-prio", set.request.dscp_prio, "DSCP:PRIO, added to the APP table");
  cmd_set->add_flag("--json", set.json, "Print the apply report as JSON");

  ProfileOptions profile;
  using fabric::pfc::ProfileCommand;
  struct {
    ProfileCommand command;
    const char* name;
    const char* help;
    CLI::App* app;
  } profile_commands[] = {
      {ProfileCommand::kPlan, "plan", "Show how devices differ from a profile; change nothing",
       nullptr},
      {ProfileCommand::kApply, "apply",
       "Change only what differs from the profile, then read back and compare", nullptr},
      {ProfileCommand::kVerify, "verify", "Exit 3 if any device drifted from the profile", nullptr},
  };
  for (auto& pc : profile_commands) {
    pc.app = app.add_subcommand(pc.name, pc.help);
    pc.app->add_option("DEV", profile.devs, "Network devices (default: the profile's devices)");
    pc.app->add_option("-p,--profile", profile.profile, "Profile file (YAML or JSON)")->required();
    pc.app->add_flag("--json", profile.json, "Print JSON");
    pc.app->add_option("--root", profile.root, "Where /sys lives (default /)");
  }

  WatchOptions watch;
  auto* cmd_watch = app.add_subcommand(
      "watch", "Report every DCB change made by anyone (lldpad, firmware DCBX, other tools)");
  cmd_watch->add_option("DEV", watch.dev, "Network device (default: every device)");
  cmd_watch->add_flag("--json", watch.json, "One JSON document per line");
  cmd_watch->add_option("--count", watch.count, "Stop after this many changes")
      ->check(CLI::NonNegativeNumber);

  if (auto status = fabric::cli::parse(app, kProgram, common, argc, argv)) return *status;
  if (cmd_show->parsed()) return run_show(show);
  if (cmd_set->parsed()) return run_set(set);
  for (const auto& pc : profile_commands) {
    if (pc.app->parsed()) return run_profile(pc.command, profile);
  }
  if (cmd_watch->parsed()) return run_watch(watch);
  return fabric::kExitUsage;
}
