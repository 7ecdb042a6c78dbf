// fabric-probe lat: RDMA latency against an agent (perftest's ib_send_lat / ib_write_lat /
// ib_read_lat, with the agent on the other end).
#include <memory>

#include "probes/cli/commands.h"
#include "probes/cli/rdma_cli.h"

namespace fabric::probes {

Subcommand add_lat_command(CLI::App& app) {
  auto args = std::make_shared<RdmaArgs>();
  auto* cmd = app.add_subcommand(
      "lat", "RDMA latency (send, write or read) to an agent: min, percentiles, max");
  add_rdma_flags(*cmd, RdmaTest::kLatency, args);
  return {cmd, [args] { return run_rdma_command(RdmaTest::kLatency, *args); }};
}

} // namespace fabric::probes
