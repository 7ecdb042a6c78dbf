// fabric-probe bw: RDMA bandwidth against an agent (perftest's ib_write_bw / ib_read_bw /
// ib_send_bw, with the agent on the other end).
#include <memory>

#include "probes/cli/commands.h"
#include "probes/cli/rdma_cli.h"

namespace fabric::probes {

Subcommand add_bw_command(CLI::App& app) {
  auto args = std::make_shared<RdmaArgs>();
  auto* cmd = app.add_subcommand(
      "bw", "RDMA bandwidth (write, read or send) to an agent, per message size");
  add_rdma_flags(*cmd, RdmaTest::kBandwidth, args);
  return {cmd, [args] { return run_rdma_command(RdmaTest::kBandwidth, *args); }};
}

} // namespace fabric::probes
