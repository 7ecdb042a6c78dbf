// Which GID a probe's queue pair uses, chosen so that the two sides cannot disagree.
//
// By default each side picks the RoCE v2 GID whose netdev owns the local IPv4 address the
// kernel uses to reach the peer; both sides then exchange their choices and check each
// other's (check_gid_agreement). `--gid-index` overrides the automatic choice.
//
// A GID is an address in the RDMA device's table: RoCE v2 entries are IPv4-mapped IPv6
// addresses (::ffff:a.b.c.d) tied to one netdev. Picking index 0 or the first entry, as
// perftest does by default, often yields a link-local or RoCE v1 GID on one side and a
// RoCE v2 one on the other, and the connection then fails with nothing but a timeout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "common/json.h"
#include "common/rdma_device.h"
#include "common/result.h"
#include "common/sysfs.h"

namespace fabric::probes {

// The local IPv4 the kernel would use to reach `peer_ipv4` (a connected UDP socket and
// getsockname: no packet is sent) and the netdev that owns that address (getifaddrs).
// Works in the caller's network namespace.
struct LocalRoute {
  std::string local_ipv4;
  std::string netdev;
};
Result<LocalRoute> local_route_to(const std::string& peer_ipv4);

struct GidChoice {
  std::string rdma_device;
  uint32_t port = 0;
  uint32_t gid_index = 0;
  std::string gid; // canonical IPv6 text, "::ffff:10.0.0.1"
  std::string netdev;
  rdma::GidType type = rdma::GidType::kUnknown;
  std::string ipv4;   // the address the GID maps to; "" for a GID that is not IPv4-mapped
  std::string reason; // for people: why this entry was chosen
  // The peer's address as this side sees it (the one it connects to, or the one the
  // connection came from). The caller fills it in before the exchange; the peer's GID must
  // map to it. "" skips that check.
  std::string peer_ipv4;
};

// Searches the GID tables of every RDMA device and port (only `rdma_device`'s when given)
// for the RoCE v2 GID ::ffff:<ipv4> whose netdev is `netdev`. A VLAN or macvlan upper
// device has GID entries of its own with its own name as netdev, so matching on the pair
// (address, netdev) is what picks eth0.100's GID rather than eth0's. When no device is
// given this also chooses the RDMA device. Errors say what was found instead: no GID for
// the address (listing the netdev's entries), only a RoCE v1 GID, the address's GID on
// another netdev, a netdev that no RDMA device serves, or two devices that both match.
Result<GidChoice> choose_gid(const SysfsReader& sysfs, const std::string& ipv4,
                             const std::string& netdev,
                             std::optional<std::string> rdma_device = {});

// The entry at `index` (--gid-index), as a choice; an unused or missing index is a
// kNotFound error that lists the valid ones.
Result<GidChoice> gid_by_index(const SysfsReader& sysfs, const std::string& rdma_device,
                               uint32_t port, uint32_t index);

// An RDMA device port whose GID table names a netdev.
struct RdmaPort {
  std::string device;
  uint32_t port = 0;
};
// Every port that has at least one GID entry for `netdev`, in device order (empty when
// none does: the netdev is not on an RDMA NIC).
Result<std::vector<RdmaPort>> rdma_ports_for_netdev(const SysfsReader& sysfs,
                                                    const std::string& netdev);
// The one port serving `netdev`; none or several is an error naming what was found.
Result<RdmaPort> rdma_port_for_netdev(const SysfsReader& sysfs, const std::string& netdev);

// Cross-check of both sides' choices after the exchange: the same RoCE version, the same
// address family (both IPv4-mapped or both not), and each GID maps to the address the
// other side uses for its peer. The error names both choices and says how to fix it.
Result<void> check_gid_agreement(const GidChoice& local, const GidChoice& remote);

// "RoCE v2 GID index 3 (::ffff:10.0.0.1 on eth0, mlx5_0 port 1)".
std::string describe_gid_choice(const GidChoice& choice);

// The choice as a JSON object, for the exchange: {"rdma_device", "port", "gid_index",
// "gid", "netdev", "type", "ipv4", "peer_ipv4", "reason"}; `type` uses the kernel's words
// ("RoCE v2").
void write_gid_choice_json(json::Writer& out, const GidChoice& choice);
// Reads it back; `path` names the object's location in errors ("gid").
Result<GidChoice> parse_gid_choice(const rapidjson::Value& value, std::string_view path);

} // namespace fabric::probes
