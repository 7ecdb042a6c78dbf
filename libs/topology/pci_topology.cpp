#include "libs/topology/pci_topology.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

namespace fabric::topo {
namespace {

constexpr std::string_view kPciDevices = "bus/pci/devices";

// Parses exactly `digits` (or, with max_digits, between `digits` and `max_digits`) hex
// digits from the front of `text` and removes them.
std::optional<uint32_t> take_hex(std::string_view& text, std::size_t digits,
                                 std::size_t max_digits = 0) {
  if (max_digits == 0) max_digits = digits;
  std::size_t n = 0;
  while (n < text.size() && n < max_digits && std::isxdigit(static_cast<unsigned char>(text[n])))
    ++n;
  if (n < digits ||
      (n < text.size() && n == max_digits && std::isxdigit(static_cast<unsigned char>(text[n])))) {
    return std::nullopt;
  }
  uint32_t value = 0;
  std::from_chars(text.data(), text.data() + n, value, 16);
  text.remove_prefix(n);
  return value;
}

bool take_char(std::string_view& text, char c) {
  if (text.empty() || text.front() != c) return false;
  text.remove_prefix(1);
  return true;
}

// "DDDD:BB:DD.F" exactly as sysfs names a function folder (domain 4 to 8 hex digits: VMD
// domains have 5).
std::optional<PciAddress> parse_sysfs_name(std::string_view text) {
  PciAddress a;
  auto domain = take_hex(text, 4, 8);
  if (!domain || !take_char(text, ':')) return std::nullopt;
  auto bus = take_hex(text, 2);
  if (!bus || !take_char(text, ':')) return std::nullopt;
  auto device = take_hex(text, 2);
  if (!device || !take_char(text, '.')) return std::nullopt;
  auto function = take_hex(text, 1);
  if (!function || !text.empty() || *device > 0x1f || *function > 7) return std::nullopt;
  a.domain = *domain;
  a.bus = *bus;
  a.device = *device;
  a.function = *function;
  return a;
}

// "pciDDDD:BB": a host bridge's folder.
bool is_host_bridge_name(std::string_view text) {
  if (!text.starts_with("pci")) return false;
  text.remove_prefix(3);
  return take_hex(text, 4, 8) && take_char(text, ':') && take_hex(text, 2) && text.empty();
}

struct Placement {
  std::string host_bridge;
  std::vector<PciAddress> chain;
};

// The host bridge and the PCI functions on a resolved sysfs path, down to the deepest
// function before anything that is not one (virtio2, net, infiniband, ...).
Placement place(std::string_view resolved) {
  Placement p;
  while (!resolved.empty()) {
    auto slash = resolved.find('/');
    std::string_view part = resolved.substr(0, slash);
    resolved = slash == std::string_view::npos ? std::string_view() : resolved.substr(slash + 1);
    if (is_host_bridge_name(part)) {
      p.host_bridge = std::string(part);
      p.chain.clear();
    } else if (auto a = parse_sysfs_name(part); a && !p.host_bridge.empty()) {
      p.chain.push_back(*a);
    } else if (!p.chain.empty()) {
      break;
    }
  }
  return p;
}

Result<uint32_t> read_hex(const SysfsReader& sysfs, const std::string& relative) {
  FABRIC_ASSIGN_OR_RETURN(std::string text, sysfs.read(relative));
  std::string_view v = text;
  if (v.starts_with("0x")) v.remove_prefix(2);
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value, 16);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
    return Error(ErrorCode::kDecode, "reading " + sysfs.path(relative),
                 "expected a hexadecimal number, found '" + text + "'");
  }
  return value;
}

Result<int> read_numa_node(const SysfsReader& sysfs, const std::string& relative) {
  FABRIC_ASSIGN_OR_RETURN(auto text, sysfs.read_optional(relative));
  if (!text) return -1; // kernels without NUMA have no such file
  int node = -1;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), node);
  if (ec != std::errc() || end != text->data() + text->size() || node < -1) {
    return Error(ErrorCode::kDecode, "reading " + sysfs.path(relative),
                 "expected a NUMA node number, found '" + *text + "'");
  }
  return node;
}

// The number of PCIe switches the path from the lowest common ancestor down to the end of
// `chain` (the function itself excluded) passes: one per upstream port, which sits at
// every odd position of a chain that starts at a root port.
int switches_below(const std::vector<PciAddress>& chain, std::size_t from) {
  int switches = 0;
  for (std::size_t i = from; i + 1 < chain.size(); ++i) {
    if (i % 2 == 1) ++switches;
  }
  return switches;
}

} // namespace

Result<PciAddress> parse_pci_address(std::string_view text) {
  std::string_view rest = text;
  // With a domain, the text has two colons.
  const bool has_domain = std::count(text.begin(), text.end(), ':') == 2;
  std::optional<uint32_t> domain = 0;
  if (has_domain) {
    domain = take_hex(rest, 1, 8);
    if (domain && !take_char(rest, ':')) domain.reset();
  }
  std::optional<uint32_t> bus, device, function;
  if (domain) bus = take_hex(rest, 2);
  if (bus && take_char(rest, ':')) device = take_hex(rest, 2);
  if (device && take_char(rest, '.')) function = take_hex(rest, 1);
  if (!function || !rest.empty() || *device > 0x1f || *function > 7) {
    return Error(ErrorCode::kInvalidArgument, "PCI address '" + std::string(text) + "'",
                 "expected DOMAIN:BUS:DEVICE.FUNCTION in hexadecimal, e.g. 0000:3b:00.0");
  }
  return PciAddress{*domain, *bus, *device, *function};
}

std::string to_string(const PciAddress& a) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", a.domain, a.bus, a.device, a.function);
  return text;
}

std::string_view distance_name(PciDistance distance) {
  switch (distance) {
  case PciDistance::kSelf: return "X";
  case PciDistance::kPix: return "PIX";
  case PciDistance::kPxb: return "PXB";
  case PciDistance::kPhb: return "PHB";
  case PciDistance::kNode: return "NODE";
  case PciDistance::kSys: return "SYS";
  }
  return "SYS";
}

std::string_view distance_meaning(PciDistance distance) {
  switch (distance) {
  case PciDistance::kSelf: return "Self";
  case PciDistance::kPix: return "Connection traversing at most a single PCIe bridge";
  case PciDistance::kPxb:
    return "Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
           "Bridge)";
  case PciDistance::kPhb:
    return "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)";
  case PciDistance::kNode:
    return "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
           "within a NUMA node";
  case PciDistance::kSys:
    return "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., "
           "QPI/UPI)";
  }
  return "";
}

PciDistance classify(const PciFunction& a, const PciFunction& b) {
  if (a.address == b.address) return PciDistance::kSelf;
  if (a.host_bridge != b.host_bridge || a.host_bridge.empty()) {
    return a.numa_node == b.numa_node ? PciDistance::kNode : PciDistance::kSys;
  }
  std::size_t common = 0;
  while (common < a.chain.size() && common < b.chain.size() && a.chain[common] == b.chain[common]) {
    ++common;
  }
  if (common == 0) return PciDistance::kPhb;
  // The lowest common ancestor is itself a switch when it is an upstream port.
  const int shared = (common - 1) % 2 == 1 ? 1 : 0;
  const int switches = shared + switches_below(a.chain, common) + switches_below(b.chain, common);
  return switches <= 1 ? PciDistance::kPix : PciDistance::kPxb;
}

Result<PciFunction> read_pci_function(const SysfsReader& sysfs, const PciAddress& address) {
  const std::string dir = std::string(kPciDevices) + "/" + to_string(address);
  if (!sysfs.exists(dir)) {
    return Error(ErrorCode::kNotFound, "PCI function " + to_string(address),
                 "not in " + sysfs.path(std::string(kPciDevices)));
  }
  FABRIC_ASSIGN_OR_RETURN(std::string resolved, sysfs.resolve(dir));
  Placement p = place(resolved);
  if (p.chain.empty() || p.chain.back() != address) {
    return Error(ErrorCode::kDecode, "PCI function " + to_string(address),
                 sysfs.path(dir) + " leads to " + resolved +
                     ", which is not below a host bridge (pciDDDD:BB)");
  }
  PciFunction f;
  f.address = address;
  f.host_bridge = std::move(p.host_bridge);
  f.chain = std::move(p.chain);
  FABRIC_ASSIGN_OR_RETURN(f.numa_node, read_numa_node(sysfs, dir + "/numa_node"));
  FABRIC_ASSIGN_OR_RETURN(auto cpus, sysfs.read_optional(dir + "/local_cpulist"));
  f.local_cpulist = cpus.value_or("");
  FABRIC_ASSIGN_OR_RETURN(f.class_code, read_hex(sysfs, dir + "/class"));
  FABRIC_ASSIGN_OR_RETURN(f.vendor, read_hex(sysfs, dir + "/vendor"));
  FABRIC_ASSIGN_OR_RETURN(f.device, read_hex(sysfs, dir + "/device"));
  // Only the link's last component names the driver: its target need not be readable
  // (a sysfs copy, a driver unbinding while we look), and no link means no driver bound.
  auto driver = sysfs.link_name(dir + "/driver");
  if (driver.ok()) {
    f.driver = std::move(*driver);
  } else if (driver.error().code() != ErrorCode::kNotFound) {
    return driver.error();
  }
  return f;
}

Result<std::vector<PciFunction>> find_pci_functions(const SysfsReader& sysfs,
                                                    const std::vector<uint32_t>& classes,
                                                    uint32_t vendor) {
  FABRIC_ASSIGN_OR_RETURN(auto names, sysfs.list(std::string(kPciDevices)));
  std::vector<PciFunction> found;
  for (const auto& name : names) {
    auto address = parse_sysfs_name(name);
    if (!address) continue;
    const std::string dir = std::string(kPciDevices) + "/" + name;
    FABRIC_ASSIGN_OR_RETURN(uint32_t class_code, read_hex(sysfs, dir + "/class"));
    // The last byte is the programming interface, which no caller cares about.
    if (std::find(classes.begin(), classes.end(), class_code >> 8) == classes.end()) continue;
    if (vendor != 0) {
      FABRIC_ASSIGN_OR_RETURN(uint32_t v, read_hex(sysfs, dir + "/vendor"));
      if (v != vendor) continue;
    }
    FABRIC_ASSIGN_OR_RETURN(auto f, read_pci_function(sysfs, *address));
    found.push_back(std::move(f));
  }
  std::sort(found.begin(), found.end(),
            [](const PciFunction& x, const PciFunction& y) { return x.address < y.address; });
  return found;
}

Result<std::optional<PciAddress>> pci_function_of(const SysfsReader& sysfs,
                                                  const std::string& relative) {
  FABRIC_ASSIGN_OR_RETURN(std::string resolved, sysfs.resolve(relative));
  Placement p = place(resolved);
  if (p.chain.empty()) return std::optional<PciAddress>();
  return std::optional<PciAddress>(p.chain.back());
}

Result<PciDistance> pci_distance(const SysfsReader& sysfs, std::string_view a, std::string_view b) {
  FABRIC_ASSIGN_OR_RETURN(PciAddress first, parse_pci_address(a));
  FABRIC_ASSIGN_OR_RETURN(PciAddress second, parse_pci_address(b));
  FABRIC_ASSIGN_OR_RETURN(PciFunction x, read_pci_function(sysfs, first));
  FABRIC_ASSIGN_OR_RETURN(PciFunction y, read_pci_function(sysfs, second));
  return classify(x, y);
}

} // namespace fabric::topo
