// fabric-probe's subcommands. Each one adds itself and its options to the CLI11 app and
// returns the function main() calls when that subcommand was chosen; the function
// returns the process exit status. One file per subcommand (cmd_<name>.cpp), each a thin
// layer of argument parsing and rendering over the fabric_probes library.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace fabric::probes {

inline constexpr const char* kProgram = "fabric-probe";

using CommandRunner = std::function<int()>;

struct Subcommand {
  CLI::App* app;
  CommandRunner run;
};

// --token-file for the clients of the agent (bw, lat, tcp, mesh).
void add_token_file_option(CLI::App& cmd, std::optional<std::string>& target);

Subcommand add_devices_command(CLI::App& app);
Subcommand add_server_command(CLI::App& app);
Subcommand add_tcp_command(CLI::App& app);
Subcommand add_mesh_command(CLI::App& app);
Subcommand add_bw_command(CLI::App& app);
Subcommand add_lat_command(CLI::App& app);
Subcommand add_lint_command(CLI::App& app);
Subcommand add_topo_command(CLI::App& app);

} // namespace fabric::probes
