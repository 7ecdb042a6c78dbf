// The command-line conventions every fabrickit binary shares: --help, --version,
// --log-level, usage errors on stderr with exit 1, errors mapped through one table.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "common/error.h"

namespace fabric::cli {

struct CommonOptions {
  std::optional<std::string> log_level;
};

// Adds --version and --log-level to `app` (CLI11 adds --help itself).
void add_common_options(CLI::App& app, const std::string& program, CommonOptions& options);

// Parses argv and sets up logging. Returns an exit status when the program should stop
// now: 0 after --help/--version, 1 for a usage error (printed to stderr).
std::optional<int> parse(CLI::App& app, const std::string& program, CommonOptions& options,
                         int argc, char** argv);

// Reports `error` on stderr and returns the exit status its code maps to.
int fail(const std::string& program, const Error& error);

} // namespace fabric::cli
