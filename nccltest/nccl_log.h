// Transport sanity from NCCL's own INFO log (captured through NCCL_DEBUG_FILE): which
// network NCCL uses (NET/IB on RoCE or InfiniBand, or the NET/Socket fallback), over which
// devices, with which GID index and traffic class, and whether GPUDirect RDMA is on.
//
// The lines read, as NCCL 2.18-2.28 prints them ("host:pid:tid [dev] NCCL INFO " first):
//   Using network IB
//   NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
//   NET/Socket : Using [0]eth0:10.0.0.1<0>
//   Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
//   NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'
//   NET/IB: ncclIbConnect: NCCL Dev 0 IbDev 0 Port 1 qp_num 1234 mtu 5 GID 3 (...)
//   NCCL_IB_TC set by environment to 106.
//   NCCL_IB_GID_INDEX set by environment to 3.
// Anything else is ignored; the file is read with a size bound.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabric::nccltest {

struct TransportReport {
  std::string network;                     // "IB", "Socket", another plugin's name, or ""
  std::vector<std::string> ib_devices;     // "mlx5_0:1/RoCE"
  std::vector<std::string> socket_devices; // "eth0:10.0.0.1<0>"
  std::optional<bool> gpudirect_rdma;      // nullopt: no NET channel seen
  std::optional<int> gid_index;
  std::optional<int> traffic_class; // set through NCCL_IB_TC; nullopt: NCCL's default (0)
  int net_channels = 0, p2p_channels = 0, shm_channels = 0;
  std::vector<std::string> warnings; // NCCL WARN lines, at most a few
  bool any_line = false;             // the log had NCCL lines at all
};

TransportReport parse_nccl_log(std::string_view text);

// NET/IB is RDMA (RoCE or InfiniBand); NET/Socket is the TCP fallback.
bool uses_rdma(const TransportReport& report);
bool socket_fallback(const TransportReport& report);

// '#' lines for the text header: the transport, and a loud warning on a socket fallback.
std::string render_transport_lines(const TransportReport& report);

// What fabric-nccltest does with NCCL's log, decided from the user's own settings: NCCL
// writes every line, WARN included, to NCCL_DEBUG_FILE when that is set, so capturing
// INFO there would take the console log away from a user who asked for it. So:
//   - the user set NCCL_DEBUG or NCCL_DEBUG_FILE: nothing is changed, their log is theirs,
//     and the transport is not read (--require-rdma refuses to run: it cannot be checked);
//   - the user set neither: NCCL's INFO log (INIT, NET and ENV, unless NCCL_DEBUG_SUBSYS
//     says otherwise) goes to a private file, read back for the transport, and its WARN
//     lines are relayed to stderr, so nothing NCCL warns about is lost.
struct NcclLogPlan {
  bool capture = false;
  std::vector<std::pair<std::string, std::string>> set; // variables to set, when capturing
  std::string note; // why the transport is not read, when not capturing
};
// `debug`, `debug_file`, `subsys`: NCCL_DEBUG, NCCL_DEBUG_FILE, NCCL_DEBUG_SUBSYS or nullptr;
// `directory`: the private folder for the capture.
NcclLogPlan plan_nccl_log(const char* debug, const char* debug_file, const char* subsys,
                          const std::string& directory);

// NCCL's WARN lines in a log, as NCCL wrote them, at most `max_lines`.
std::vector<std::string> nccl_warn_lines(std::string_view text, std::size_t max_lines = 50);

// Reads at most `max_bytes` of each file whose name starts with `prefix` in `directory`
// (NCCL writes one file per process, "%h.%p" expanded).
std::string read_nccl_logs(const std::string& directory, const std::string& prefix,
                           std::size_t max_bytes = std::size_t{4} << 20);

} // namespace fabric::nccltest
