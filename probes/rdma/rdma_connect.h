// Connecting RC queue pairs over the out-of-band channel: each side picks its GID, tells
// the other its QP numbers, PSNs, buffer key and addresses, GID and MTU (rdma_exchange.h),
// checks the other's GID choice, and moves its QPs INIT -> RTR -> RTS. A failed transition
// is reported with its likely cause (rdma_triage.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/sysfs.h"
#include "probes/devices/gid_choice.h"
#include "probes/rdma/rdma_exchange.h"
#include "probes/rdma/rdma_resources.h"

namespace fabric::probes {

// Transport settings both sides use (perftest's defaults): the local ACK timeout is
// 4.096 us x 2^14 = 67 ms, 7 transport retries, infinite RNR retries (a slow receiver is
// waited for; the engines' stall timeout bounds that wait).
inline constexpr uint8_t kQpTimeout = 14;
inline constexpr uint8_t kQpRetryCount = 7;
inline constexpr uint8_t kQpRnrRetry = 7;
inline constexpr uint8_t kQpMinRnrTimer = 12; // 0.64 ms
inline constexpr uint8_t kHopLimit = 64;

// This side's GID for reaching `peer_ipv4`: the RoCE v2 GID of the local address the
// kernel uses to reach it (gid_choice.h), or the entry `gid_index` when forced. `device`
// restricts the search (and is required to be the GID's device when forced).
Result<GidChoice> choose_local_gid(const SysfsReader& sysfs,
                                   const std::optional<std::string>& device, uint32_t port,
                                   std::optional<uint32_t> gid_index, const std::string& peer_ipv4);

// check_gid_agreement() as a failure of the connection (exit 2): the GIDs were checked
// because the QPs could not work with them.
Result<void> agree_on_gids(const GidChoice& local, const GidChoice& remote);

// Refuses a path MTU larger than either port's active MTU (exit 2, with the MTU mismatch
// as the likely cause): such a QP would be refused at RTR or drop every larger packet.
Result<void> check_path_mtu(const RdmaEndpoint& local, const RdmaEndpoint& remote, uint32_t mtu);

// A random 24-bit packet sequence number.
uint32_t random_psn();

// This side's endpoint message: its GID, port, buffer and one entry per QP.
RdmaEndpoint describe_endpoint(const RdmaResources& resources, const GidChoice& gid,
                               std::optional<uint32_t> mtu_request,
                               const std::vector<uint32_t>& psns);

struct PathSettings {
  uint32_t mtu = 1024; // bytes, agreed_mtu()
  uint8_t traffic_class = 0;
  uint8_t sl = 0;
};

// INIT -> RTR -> RTS for every QP against `remote`'s QPs, one to one.
Result<void> connect_queue_pairs(RdmaResources& resources, const RdmaEndpoint& local,
                                 const RdmaEndpoint& remote, const PathSettings& path);

// ibv_mtu for a byte count (256..4096).
int mtu_enum(uint32_t bytes);

// The IPv4 address of the peer of a connected TCP socket; "" for other sockets.
std::string tcp_peer_ipv4(int fd);
// `host` resolved to an IPv4 address (the first one) within `timeout`, or `host` itself
// when it is one.
Result<std::string> resolve_ipv4(const std::string& host, std::chrono::milliseconds timeout);

} // namespace fabric::probes
