#include "common/rdma_device.h"

#include <arpa/inet.h>
#include <cstring>

namespace fabric::rdma {

std::string_view gid_type_name(GidType type) {
  switch (type) {
  case GidType::kIb: return "IB";
  case GidType::kRoceV1: return "RoCE v1";
  case GidType::kRoceV2: return "RoCE v2";
  case GidType::kUnknown: break;
  }
  return "unknown";
}

std::string port_netdev(const std::vector<GidEntry>& gids) {
  for (const auto& g : gids) {
    if (g.index == 0 && !g.netdev.empty()) return g.netdev;
  }
  for (const auto& g : gids) {
    if (!g.netdev.empty()) return g.netdev;
  }
  return "";
}

std::optional<std::string> ipv4_of_gid(const uint8_t raw[16]) {
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(raw, kMappedPrefix, sizeof kMappedPrefix) != 0) return std::nullopt;
  char text[INET_ADDRSTRLEN];
  if (inet_ntop(AF_INET, raw + 12, text, sizeof text) == nullptr) return std::nullopt;
  return std::string(text);
}

std::string gid_to_string(const uint8_t raw[16]) {
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(AF_INET6, raw, text, sizeof text) == nullptr) return "";
  return text;
}

bool parse_gid(const std::string& text, uint8_t raw[16]) {
  return inet_pton(AF_INET6, text.c_str(), raw) == 1;
}

// Values follow enum ibv_port_state, ibv_mtu and the IBTA PortInfo encodings; kept as
// numbers here so that this file does not need the verbs headers.
std::string port_state_name(uint32_t state) {
  switch (state) {
  case 0: return "NOP";
  case 1: return "DOWN";
  case 2: return "INIT";
  case 3: return "ARMED";
  case 4: return "ACTIVE";
  case 5: return "ACTIVE_DEFER";
  default: return "UNKNOWN(" + std::to_string(state) + ")";
  }
}

std::string phys_state_name(uint32_t phys_state) {
  switch (phys_state) {
  case 1: return "SLEEP";
  case 2: return "POLLING";
  case 3: return "DISABLED";
  case 4: return "PORT_CONFIGURATION_TRAINING";
  case 5: return "LINK_UP";
  case 6: return "LINK_ERROR_RECOVERY";
  case 7: return "PHY_TEST";
  default: return "UNKNOWN(" + std::to_string(phys_state) + ")";
  }
}

uint32_t mtu_enum_to_bytes(uint32_t mtu_enum) {
  return mtu_enum >= 1 && mtu_enum <= 5 ? 128u << mtu_enum : 0;
}

uint32_t width_lanes(uint32_t width_enum) {
  switch (width_enum) {
  case 1: return 1;
  case 2: return 4;
  case 4: return 8;
  case 8: return 12;
  case 16: return 2;
  default: return 0;
  }
}

std::string width_name(uint32_t width_enum) {
  uint32_t lanes = width_lanes(width_enum);
  return lanes == 0 ? "" : std::to_string(lanes) + "X";
}

// Nominal data rates per lane, as the kernel's sysfs `rate` and ibv_devinfo state them.
std::optional<double> lane_speed_gbps(uint32_t speed_enum) {
  switch (speed_enum) {
  case 1: return 2.5;
  case 2: return 5.0;
  case 4: return 10.0;
  case 8: return 10.0; // FDR10
  case 16: return 14.0;
  case 32: return 25.0;
  case 64: return 50.0;
  case 128: return 100.0;
  case 256: return 200.0;
  default: return std::nullopt;
  }
}

std::string speed_name(uint32_t speed_enum) {
  switch (speed_enum) {
  case 1: return "SDR";
  case 2: return "DDR";
  case 4: return "QDR";
  case 8: return "FDR10";
  case 16: return "FDR";
  case 32: return "EDR";
  case 64: return "HDR";
  case 128: return "NDR";
  case 256: return "XDR";
  default: return "";
  }
}

} // namespace fabric::rdma
