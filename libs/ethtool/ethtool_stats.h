// A netdev's ethtool statistics (`ethtool -S`), read through the SIOCETHTOOL ioctl:
// ETHTOOL_GSSET_INFO for their number, ETHTOOL_GSTRINGS for their names, ETHTOOL_GSTATS
// for their values. The names are the driver's own: mlx5 reports rx_prio3_pause, veth
// reports peer_ifindex and per-queue XDP counters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fabric::probes {

struct EthtoolStat {
  std::string name;
  uint64_t value = 0;
};

// Every statistic of `netdev` in the calling thread's network namespace, in the driver's
// order. A netdev that does not exist is kNotFound; one whose driver has no statistics
// (loopback, many virtual devices) is kUnsupported.
Result<std::vector<EthtoolStat>> read_ethtool_stats(const std::string& netdev);

// Whether a statistic counts Ethernet pause frames (global or per priority): its name
// contains "pause", which is the same as matching /prio\d+_pause|pause/ (mlx5:
// rx_prio3_pause, tx_prio3_pause_duration, rx_pause_ctrl_phy). Drivers that call pause
// frames something else (XON/XOFF) are not matched.
bool is_pause_stat(std::string_view name);

} // namespace fabric::probes
