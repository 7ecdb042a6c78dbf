// IPv4 and IPv6 prefixes as configuration and pod records give them ("10.0.0.0/8",
// "10.10.0.5/16" on an interface, "fd00::1"), in the canonical text iptables prints.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fabric::exporters {

struct Cidr {
  int family = 0; // AF_INET or AF_INET6
  std::array<uint8_t, 16> address{};
  unsigned prefix = 0;

  bool v4() const;
  // "10.0.0.0/8", "fd00::/8"; hosts as "10.1.2.3/32".
  std::string text() const;
  // Whether `other` (of the same family) lies inside this network, equal included.
  bool contains(const Cidr& other) const;
  bool operator==(const Cidr&) const = default;
  auto operator<=>(const Cidr&) const = default;
};

// A network: "10.0.0.0/8"; host bits must be zero. A bare address is a /32 or /128.
Result<Cidr> parse_network(std::string_view text);
// An address, with or without an interface prefix length ("10.10.0.5/16" -> 10.10.0.5/32).
Result<Cidr> parse_host(std::string_view text);

} // namespace fabric::exporters
