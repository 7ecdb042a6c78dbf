// The command-line flags `fabric-probe bw` and `lat` share, and how both print a report.
// Values are collected as text (RdmaArgs) and checked by make_rdma_options(), so that
// every bad value is reported the same way: exit 1, naming the flag.
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

#include "probes/rdma/rdma_options.h"

namespace fabric::probes {

// Adds HOST and the flags of `test` to `cmd`, storing into `args`.
void add_rdma_flags(CLI::App& cmd, RdmaTest test, const std::shared_ptr<RdmaArgs>& args);

// Parses, runs and prints; returns the exit status.
int run_rdma_command(RdmaTest test, const RdmaArgs& args);

} // namespace fabric::probes
