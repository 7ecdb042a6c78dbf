// RDMA devices, their ports and GID tables, as fabric-probe, fabric-cni and the exporter
// see them.
// Plain data, no verbs headers: sources fill it, renderers print it, tests build it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabric::rdma {

enum class GidType { kIb, kRoceV1, kRoceV2, kUnknown };

struct GidEntry {
  uint32_t index = 0;
  std::string gid; // canonical IPv6 text, e.g. "::ffff:10.77.0.11"
  GidType type = GidType::kUnknown;
  std::string netdev;              // "" when the GID has no netdev (InfiniBand)
  std::optional<std::string> ipv4; // set for IPv4-mapped GIDs (::ffff:a.b.c.d)
};

struct PortInfo {
  uint32_t number = 0;
  std::string state;                // DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER
  std::string phys_state;           // LINK_UP, DISABLED, POLLING, ...
  std::string link_layer;           // Ethernet or InfiniBand
  uint32_t active_mtu = 0;          // bytes
  uint32_t max_mtu = 0;             // bytes
  std::optional<double> speed_gbps; // per-port rate: lane speed x width
  std::string width;                // 1X, 2X, 4X, 8X, 12X
  std::string speed_name;           // SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR
  std::vector<GidEntry> gids;
};

struct DeviceInfo {
  std::string name;
  std::string node_type; // CA, RNIC, ...
  std::string transport; // InfiniBand, iWARP, ...
  std::string node_guid; // xxxx:xxxx:xxxx:xxxx
  std::string fw_version;
  std::vector<PortInfo> ports;
};

std::string_view gid_type_name(GidType type);

// A port's own netdev in its GID table: index 0 is the port's default GID, which the
// kernel always ties to the netdev the port sits on (uppers only ever get later indexes);
// failing that, the first netdev named; "" when none is (InfiniBand).
std::string port_netdev(const std::vector<GidEntry>& gids);

// "::ffff:10.0.0.1" -> "10.0.0.1"; nullopt for GIDs that are not IPv4-mapped.
std::optional<std::string> ipv4_of_gid(const uint8_t raw[16]);
// Canonical RFC 5952 text of a 16-byte GID (inet_ntop).
std::string gid_to_string(const uint8_t raw[16]);
// Parses sysfs's GID form "0000:0000:0000:0000:0000:ffff:0a4d:000b" (or any IPv6 text).
bool parse_gid(const std::string& text, uint8_t raw[16]);

// Verbs enum values as text (the numbers are ibv_port_state / ibv_mtu / speeds).
std::string port_state_name(uint32_t state);
std::string phys_state_name(uint32_t phys_state);
uint32_t mtu_enum_to_bytes(uint32_t mtu_enum);
std::string width_name(uint32_t width_enum);
// Lane speed for ibv_port_attr.active_speed, and its IBTA name.
std::optional<double> lane_speed_gbps(uint32_t speed_enum);
std::string speed_name(uint32_t speed_enum);
uint32_t width_lanes(uint32_t width_enum);

} // namespace fabric::rdma
