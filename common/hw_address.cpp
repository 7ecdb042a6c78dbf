#include "common/hw_address.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

namespace fabric {
namespace {

bool all_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// The value of a field that all_hex() accepted (at most 8 digits, so it fits).
uint32_t hex_value(std::string_view s) {
  uint32_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v, 16);
  return v;
}

} // namespace

Result<MacAddress> parse_mac(std::string_view text) {
  auto bad = [&] {
    return Error(ErrorCode::kInvalidArgument, "MAC address '" + std::string(text) + "'",
                 "expected six hexadecimal octets separated by colons (aa:bb:cc:dd:ee:ff)");
  };
  MacAddress mac{};
  if (text.size() != 17) return bad();
  for (std::size_t i = 0; i < mac.size(); ++i) {
    std::string_view octet = text.substr(i * 3, 2);
    if (!all_hex(octet) || (i < 5 && text[i * 3 + 2] != ':')) return bad();
    mac[i] = static_cast<uint8_t>(hex_value(octet));
  }
  return mac;
}

std::string format_mac(const MacAddress& mac) {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return text;
}

bool is_unicast_mac(const MacAddress& mac) {
  return (mac[0] & 1) == 0 && std::any_of(mac.begin(), mac.end(), [](uint8_t b) { return b; });
}

Result<std::string> normalize_pci_address(std::string_view text) {
  auto bad = [&] {
    return Error(ErrorCode::kInvalidArgument, "PCI address '" + std::string(text) + "'",
                 "expected DDDD:BB:DD.F or BB:DD.F (hexadecimal, e.g. 0000:3b:00.0; a VMD "
                 "domain may have up to 8 digits)");
  };
  std::string_view domain = "0000";
  std::string_view rest = text;
  if (std::size_t colon = text.find(':'); colon != std::string_view::npos && colon != 2) {
    domain = text.substr(0, colon);
    rest = text.substr(colon + 1);
    if (domain.size() < 4 || domain.size() > 8) return bad();
  }
  // rest is "BB:DD.F".
  if (rest.size() != 7 || rest[2] != ':' || rest[5] != '.') return bad();
  std::string_view bus = rest.substr(0, 2), device = rest.substr(3, 2), function = rest.substr(6);
  if (!all_hex(domain) || !all_hex(bus) || !all_hex(device) || !all_hex(function)) return bad();
  if (hex_value(device) > 0x1f || hex_value(function) > 7) return bad();
  char canonical[32];
  std::snprintf(canonical, sizeof canonical, "%04x:%02x:%02x.%x", hex_value(domain), hex_value(bus),
                hex_value(device), hex_value(function));
  return std::string(canonical);
}

} // namespace fabric
