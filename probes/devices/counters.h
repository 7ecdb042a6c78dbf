// Counter deltas over a test, read on both ends: what the NIC saw while the probe ran.
//
// Three sources, each optional (a missing one is left out and noted, never an error):
// - "port.*": the RDMA port's PMA counters (ports/P/counters). port_xmit_data and
//   port_rcv_data count 4-byte words; they become port.xmit_bytes / port.rcv_bytes (x4).
//   port_xmit_packets / port_rcv_packets become port.xmit_packets / port.rcv_packets;
//   any other file there keeps its name (port.port_xmit_wait, port.symbol_error, ...).
//   soft-RoCE (rxe) has no PMA and so no counters directory.
// - "hw.*": every file under ports/P/hw_counters, with the driver's names (mlx5:
//   np_cnp_sent, rp_cnp_handled, np_ecn_marked_roce_packets, out_of_sequence,
//   local_ack_timeout_err; rxe: rcvd_pkts, duplicate_request, retry_exceeded_err, ...).
// - "eth.*": the netdev's ethtool statistics whose names say "pause" (per-priority and
//   global pause frames, e.g. eth.rx_prio3_pause).
//
// Wrap-around: the kernel reads the 64-bit extended PMA counters where the device has
// them, so the byte counters do not wrap in practice. On a device with only the legacy
// 32-bit PortCounters, the IBTA counters saturate at 0xFFFFFFFF instead of wrapping; a
// saturated data counter is left out of the snapshot (and noted) because its delta would
// be wrong. A counter that goes backwards between snapshots was reset (driver reload,
// counter clear): its delta is left out and noted, not guessed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "common/sysfs.h"
#include "libs/ethtool/ethtool_stats.h"

namespace fabric::probes {

struct CounterSnapshot {
  // "port.xmit_bytes", "hw.rp_cnp_handled", "eth.rx_prio3_pause"
  std::map<std::string, uint64_t> values;
  std::chrono::steady_clock::time_point taken;
  // Sources or counters that were missing or unreadable, for people.
  std::vector<std::string> notes;
};

// How the ethtool statistics are read; tests pass a fake, the default is the ioctl.
using EthtoolReader = std::function<Result<std::vector<EthtoolStat>>(const std::string& netdev)>;

// Reads all three sources. Errors only for a port that does not exist or a netdev that
// does not exist in the caller's namespace; `netdev` "" skips the ethtool source.
Result<CounterSnapshot> read_counters(const SysfsReader& sysfs, const std::string& rdma_device,
                                      uint32_t port, const std::string& netdev,
                                      const EthtoolReader& ethtool = read_ethtool_stats);

struct CounterDelta {
  std::map<std::string, uint64_t> values;
  double seconds = 0; // between the two snapshots
  std::vector<std::string> notes;
};

// after - before for every counter present in both; counters present in one snapshot
// only, or that went backwards, are left out and noted. Notes of both snapshots carry over.
CounterDelta delta(const CounterSnapshot& before, const CounterSnapshot& after);

// {"seconds": 10.0, "port": {"xmit_bytes": ...}, "hw": {...}, "eth": {...},
//  "notes": [...]}: the three groups are always present (empty when their source was
// missing), keys inside them are the names without the group prefix.
void write_counters_json(json::Writer& out, const CounterDelta& delta);

// A few lines for a terminal: port counters always (with rates for the byte counters),
// hw and eth counters only when they moved, then how many stayed at zero, then notes.
std::string render_counters_text(const CounterDelta& delta);

} // namespace fabric::probes
