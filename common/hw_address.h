// Hardware addresses as users and runtimes write them: Ethernet MACs and PCI function
// addresses. One parser for each, so that a value a configuration check accepts is one
// the kernel-facing code accepts too, and every message says the same thing.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fabric {

using MacAddress = std::array<uint8_t, 6>;

// "aa:bb:cc:dd:ee:ff", either case. kInvalidArgument naming the text when malformed.
Result<MacAddress> parse_mac(std::string_view text);
// Lower case, colon-separated: what iproute2 and sysfs print.
std::string format_mac(const MacAddress& mac);
// Neither a group address (the low bit of the first octet) nor all zero: what a link can
// carry as its own address.
bool is_unicast_mac(const MacAddress& mac);

// The canonical form of a PCI function address, as sysfs names it under
// /sys/bus/pci/devices: "DDDD:BB:DD.F", lower case. Accepts "BB:DD.F" (domain 0) and
// domains of 4 to 8 hex digits: VMD hosts put devices in domains above 0xffff
// ("10000:01:00.0"), and the kernel prints a domain with at least four digits. A device
// number has 5 bits, a function 3. kInvalidArgument naming the text otherwise.
Result<std::string> normalize_pci_address(std::string_view text);

} // namespace fabric
