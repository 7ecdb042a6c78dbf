// fabric-probe: RDMA fabric probes. This file only wires the subcommands together; each
// lives in its own cmd_<name>.cpp over the fabric_probes library.
#include <vector>

#include "common/cli.h"
#include "probes/cli/commands.h"

int main(int argc, char** argv) {
  using namespace fabric::probes;
  CLI::App app{"fabric-probe: RDMA and RoCE fabric probes", kProgram};
  fabric::cli::CommonOptions common;
  fabric::cli::add_common_options(app, kProgram, common);
  app.require_subcommand(1);

  std::vector<Subcommand> subcommands = {
      add_devices_command(app), add_server_command(app), add_tcp_command(app),
      add_mesh_command(app),    add_bw_command(app),     add_lat_command(app),
      add_lint_command(app),    add_topo_command(app),
  };

  if (auto status = fabric::cli::parse(app, kProgram, common, argc, argv)) return *status;
  for (const auto& sub : subcommands) {
    if (sub.app->parsed()) return sub.run();
  }
  return fabric::kExitUsage;
}
