// fabric-probe devices: RDMA devices, ports and GID tables.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.h"
#include "probes/cli/commands.h"
#include "probes/devices/device_report.h"
#include "probes/devices/device_source.h"

namespace fabric::probes {
namespace {

struct DevicesOptions {
  bool json = false;
  std::vector<std::string> names;
};

int run_devices(const DevicesOptions& options) {
  auto source = make_verbs_device_source();
  auto devices = source->list_devices();
  if (!devices.ok()) return cli::fail(kProgram, devices.error());
  auto chosen = select_devices(std::move(*devices), options.names);
  if (!chosen.ok()) return cli::fail(kProgram, chosen.error());
  std::string out = options.json ? render_devices_json(*chosen) : render_devices_text(*chosen);
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

} // namespace

Subcommand add_devices_command(CLI::App& app) {
  auto options = std::make_shared<DevicesOptions>();
  auto* cmd = app.add_subcommand(
      "devices", "List RDMA devices, their ports and GID tables (RoCE v1/v2, netdev, IPv4)");
  cmd->add_flag("--json", options->json, "Print JSON instead of text");
  cmd->add_option("-d,--device", options->names, "Only this RDMA device (repeatable)")
      ->type_name("DEVICE");
  return {cmd, [options] { return run_devices(*options); }};
}

} // namespace fabric::probes
