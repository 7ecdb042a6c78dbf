// Line-rate context: the NIC a rank's inter-node traffic crosses and its speed (the RDMA
// port's rate, else the netdev's speed), and the bus-bandwidth ceiling they give a run.
//
// A node's ranks share its NICs, and NCCL spreads a node's inter-node traffic over them,
// so the ceiling is the slowest node's NIC bandwidth (the sum of its distinct NICs),
// in GB/s. All ranks on one node: no inter-node traffic, no ceiling.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/sysfs.h"
#include "nccltest/report.h"

namespace fabric::nccltest {

// "100 Gb/sec (4X EDR)" -> 100; "2.5 Gb/sec (1X SDR)" -> 2.5.
std::optional<double> parse_port_rate(const std::string& text);

struct NicChoice {
  std::optional<std::string> requested; // --nic
  std::optional<std::string> ib_hca;    // NCCL_IB_HCA
  int local_rank = 0;
};

// The NIC of one rank, read under `sysfs` (class/infiniband, class/net) and the default
// route from `proc_net_route` (the content of /proc/net/route). nullopt: nothing with a
// known speed. An explicit --nic that does not exist is an error.
Result<std::optional<NicInfo>> detect_nic(const SysfsReader& sysfs, const NicChoice& choice,
                                          const std::string& proc_net_route);

LineRate line_rate_ceiling(const std::vector<RankInfo>& ranks);

} // namespace fabric::nccltest
