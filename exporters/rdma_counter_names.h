// Which RDMA port counters the exporter serves, and under which names.
//
// Port counters (ports/P/counters) are the IBTA PMA counters and carry the same file names
// on every driver that has them. hw_counters (ports/P/hw_counters) are each driver's own:
// the table maps the names of mlx5, bnxt_re and rxe for the counters that matter on RoCE
// to one family each, so a dashboard needs no per-vendor query. A device has at most one
// of the names of a family (they come from different drivers).
#pragma once

#include <optional>
#include <string_view>

namespace fabric::exporters {

// A PMA data counter: bytes (port_*_data, counted in 4-byte words) or packets.
struct PortDataCounter {
  std::string_view family;    // "fabric_rdma_port_data_bytes_total"
  std::string_view direction; // "tx" or "rx"
  unsigned scale;             // 4 for the data counters
};
std::optional<PortDataCounter> port_data_counter(std::string_view file);

// The PMA error and discard counters served in fabric_rdma_port_errors_total{counter=...},
// by their file names (symbol_error, port_rcv_errors, port_xmit_discards, ...).
bool is_port_error_counter(std::string_view file);

// A driver hw_counter served under a vendor-neutral family.
struct HwCounter {
  std::string_view family; // "fabric_rdma_cnp_sent_total"
  std::string_view help;
};
std::optional<HwCounter> hw_counter(std::string_view file);

// hw_counters that stand in for the port data counters on devices without a counters
// directory (bnxt_re: tx_bytes/rx_bytes/tx_pkts/rx_pkts; rxe: sent_pkts/rcvd_pkts).
std::optional<PortDataCounter> hw_data_counter(std::string_view file);

} // namespace fabric::exporters
