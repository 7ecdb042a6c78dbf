// fabric-probe: RDMA fabric probes. This file only parses arguments and renders; the
// work is in the fabric_probes library.
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.h"
#include "probes/device_report.h"
#include "probes/device_source.h"

namespace {

constexpr const char* kProgram = "fabric-probe";

struct DevicesOptions {
  bool json = false;
  std::vector<std::string> names;
};

int run_devices(const DevicesOptions& options) {
  using namespace fabric::probes;
  auto source = make_verbs_device_source();
  auto devices = source->list_devices();
  if (!devices.ok()) return fabric::cli::fail(kProgram, devices.error());
  auto chosen = select_devices(std::move(*devices), options.names);
  if (!chosen.ok()) return fabric::cli::fail(kProgram, chosen.error());
  std::string out = options.json ? render_devices_json(*chosen) : render_devices_text(*chosen);
  std::fputs(out.c_str(), stdout);
  return fabric::kExitOk;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabric-probe: RDMA and RoCE fabric probes", kProgram};
  fabric::cli::CommonOptions common;
  fabric::cli::add_common_options(app, kProgram, common);
  app.require_subcommand(1);

  DevicesOptions devices;
  auto* cmd_devices = app.add_subcommand(
      "devices", "List RDMA devices, their ports and GID tables (RoCE v1/v2, netdev, IPv4)");
  cmd_devices->add_flag("--json", devices.json, "Print JSON instead of text");
  cmd_devices->add_option("-d,--device", devices.names, "Only this RDMA device (repeatable)");

  if (auto status = fabric::cli::parse(app, kProgram, common, argc, argv)) return *status;
  if (cmd_devices->parsed()) return run_devices(devices);
  return fabric::kExitUsage;
}
