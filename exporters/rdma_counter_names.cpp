#include "exporters/rdma_counter_names.h"

#include <algorithm>
#include <iterator>

namespace fabric::exporters {
namespace {

constexpr std::string_view kBytes = "fabric_rdma_port_data_bytes_total";
constexpr std::string_view kPackets = "fabric_rdma_port_packets_total";

struct DataName {
  std::string_view file;
  PortDataCounter counter;
};

constexpr DataName kPortData[] = {
    {"port_xmit_data", {kBytes, "tx", 4}},
    {"port_rcv_data", {kBytes, "rx", 4}},
    {"port_xmit_packets", {kPackets, "tx", 1}},
    {"port_rcv_packets", {kPackets, "rx", 1}},
};

constexpr DataName kHwData[] = {
    {"tx_bytes", {kBytes, "tx", 1}},    // bnxt_re
    {"rx_bytes", {kBytes, "rx", 1}},    // bnxt_re
    {"tx_pkts", {kPackets, "tx", 1}},   // bnxt_re
    {"rx_pkts", {kPackets, "rx", 1}},   // bnxt_re
    {"sent_pkts", {kPackets, "tx", 1}}, // rxe
    {"rcvd_pkts", {kPackets, "rx", 1}}, // rxe
};

constexpr std::string_view kPortErrors[] = {
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
};

struct HwName {
  std::string_view file;
  HwCounter counter;
};

constexpr std::string_view kCnpSent = "fabric_rdma_cnp_sent_total";
constexpr std::string_view kCnpHandled = "fabric_rdma_cnp_handled_total";
constexpr std::string_view kEcn = "fabric_rdma_ecn_marked_packets_total";
constexpr std::string_view kOos = "fabric_rdma_out_of_sequence_total";
constexpr std::string_view kSeq = "fabric_rdma_packet_sequence_errors_total";
constexpr std::string_view kAckTimeout = "fabric_rdma_local_ack_timeouts_total";
constexpr std::string_view kRetrans = "fabric_rdma_retransmits_total";
constexpr std::string_view kOob = "fabric_rdma_out_of_buffer_total";
constexpr std::string_view kDup = "fabric_rdma_duplicate_requests_total";

constexpr std::string_view kCnpSentHelp =
    "Congestion notification packets sent as notification point (mlx5 np_cnp_sent, "
    "bnxt_re cnp_tx_pkts).";
constexpr std::string_view kCnpHandledHelp =
    "Congestion notification packets handled as reaction point (mlx5 rp_cnp_handled, "
    "bnxt_re cnp_rx_pkts).";
constexpr std::string_view kEcnHelp = "RoCE packets received with ECN congestion experienced (mlx5 "
                                      "np_ecn_marked_roce_packets, bnxt_re rx_ecn_marked_pkts).";
constexpr std::string_view kOosHelp =
    "Packets received out of sequence (mlx5 out_of_sequence, rxe out_of_seq_request).";
constexpr std::string_view kSeqHelp =
    "Packet sequence error NAKs received (mlx5 packet_seq_err, bnxt_re seq_err_naks_rcvd, "
    "rxe rcvd_seq_err).";
constexpr std::string_view kAckTimeoutHelp =
    "Times a requester's ACK timer expired and it retransmitted (mlx5 local_ack_timeout_err, "
    "bnxt_re to_retransmits).";
constexpr std::string_view kRetransHelp =
    "Retransmissions by the requester (mlx5 roce_adp_retrans, rxe completer_retry_err).";
constexpr std::string_view kOobHelp =
    "Packets dropped for lack of a receive buffer (mlx5 out_of_buffer, bnxt_re "
    "res_oob_drop_count).";
constexpr std::string_view kDupHelp =
    "Duplicate requests received (mlx5 and rxe duplicate_request, bnxt_re dup_reqs).";

constexpr HwName kHw[] = {
    {"np_cnp_sent", {kCnpSent, kCnpSentHelp}},
    {"cnp_tx_pkts", {kCnpSent, kCnpSentHelp}},
    {"rp_cnp_handled", {kCnpHandled, kCnpHandledHelp}},
    {"cnp_rx_pkts", {kCnpHandled, kCnpHandledHelp}},
    {"rp_cnp_ignored",
     {"fabric_rdma_cnp_ignored_total",
      "Congestion notification packets ignored by the reaction point (mlx5 rp_cnp_ignored)."}},
    {"np_ecn_marked_roce_packets", {kEcn, kEcnHelp}},
    {"rx_ecn_marked_pkts", {kEcn, kEcnHelp}},
    {"out_of_sequence", {kOos, kOosHelp}},
    {"out_of_seq_request", {kOos, kOosHelp}},
    {"packet_seq_err", {kSeq, kSeqHelp}},
    {"seq_err_naks_rcvd", {kSeq, kSeqHelp}},
    {"rcvd_seq_err", {kSeq, kSeqHelp}},
    {"local_ack_timeout_err", {kAckTimeout, kAckTimeoutHelp}},
    {"to_retransmits", {kAckTimeout, kAckTimeoutHelp}},
    {"roce_adp_retrans", {kRetrans, kRetransHelp}},
    {"completer_retry_err", {kRetrans, kRetransHelp}},
    {"out_of_buffer", {kOob, kOobHelp}},
    {"res_oob_drop_count", {kOob, kOobHelp}},
    {"implied_nak_seq_err",
     {"fabric_rdma_implied_nak_total",
      "Implied NAK sequence errors: a response arrived for a later request than expected "
      "(mlx5 implied_nak_seq_err)."}},
    {"duplicate_request", {kDup, kDupHelp}},
    {"dup_reqs", {kDup, kDupHelp}},
    {"rnr_nak_retry_err",
     {"fabric_rdma_rnr_nak_retry_errors_total",
      "Requests that exhausted their RNR NAK retries: the responder had no receive buffer "
      "posted (mlx5 rnr_nak_retry_err)."}},
};

template <typename Table> auto find(const Table& table, std::string_view file) {
  return std::find_if(std::begin(table), std::end(table),
                      [&](const auto& entry) { return entry.file == file; });
}

} // namespace

std::optional<PortDataCounter> port_data_counter(std::string_view file) {
  auto it = find(kPortData, file);
  if (it == std::end(kPortData)) return std::nullopt;
  return it->counter;
}

bool is_port_error_counter(std::string_view file) {
  return std::find(std::begin(kPortErrors), std::end(kPortErrors), file) != std::end(kPortErrors);
}

std::optional<HwCounter> hw_counter(std::string_view file) {
  auto it = find(kHw, file);
  if (it == std::end(kHw)) return std::nullopt;
  return it->counter;
}

std::optional<PortDataCounter> hw_data_counter(std::string_view file) {
  auto it = find(kHwData, file);
  if (it == std::end(kHwData)) return std::nullopt;
  return it->counter;
}

} // namespace fabric::exporters
