#include "cni/parent.h"

#include <cctype>
#include <charconv>
#include <optional>
#include <vector>

namespace fabric::cni {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// Names become sysfs path components: keep "/" and ".." out.
Result<void> check_component(const std::string& name, const std::string& field) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, field, "'" + name + "' is not a device name");
  }
  return Ok();
}

bool is_hex(std::string_view s) {
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return !s.empty();
}

std::optional<unsigned> hex_value(std::string_view s) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The PCI address a sysfs `device` link points at, or "" when it is something else
// (virtio0, a platform device) or absent.
std::string pci_of_link(const SysfsReader& sysfs, const std::string& link) {
  auto target = sysfs.link_name(link);
  if (!target.ok()) return {};
  auto full = normalize_pci_address(*target);
  if (!full.ok() || *full != *target) return {};
  return *full;
}

std::vector<uint32_t> ports_of(const SysfsReader& sysfs, const std::string& rdma) {
  std::vector<uint32_t> ports;
  auto names = sysfs.list("class/infiniband/" + rdma + "/ports");
  if (!names.ok()) return ports;
  for (const auto& n : *names) {
    uint32_t p = 0;
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), p);
    if (ec == std::errc() && end == n.data() + n.size()) ports.push_back(p);
  }
  return ports;
}

// The netdev of GID index 0 of a port: the default GID belongs to the port's own netdev,
// never to a macvlan on it.
std::optional<std::string> port_netdev(const SysfsReader& sysfs, const std::string& rdma,
                                       uint32_t port) {
  auto ndev = sysfs.read_optional("class/infiniband/" + rdma + "/ports/" + std::to_string(port) +
                                  "/gid_attrs/ndevs/0");
  if (!ndev.ok() || !*ndev || (*ndev)->empty()) return std::nullopt;
  return **ndev;
}

std::optional<uint32_t> port_serving(const SysfsReader& sysfs, const std::string& rdma,
                                     const std::string& netdev) {
  for (uint32_t p : ports_of(sysfs, rdma)) {
    if (port_netdev(sysfs, rdma, p) == netdev) return p;
  }
  return std::nullopt;
}

uint32_t first_port(const SysfsReader& sysfs, const std::string& rdma) {
  auto ports = ports_of(sysfs, rdma);
  return ports.empty() ? 1 : ports.front();
}

// Of the netdevs of a PCI function, the one the RDMA device `rdma` (may be "") serves:
// by the default GID, else the only one.
Result<std::string> pick_netdev(const SysfsReader& sysfs, const std::string& rdma,
                                const std::vector<std::string>& candidates,
                                const std::string& owner) {
  for (const auto& n : candidates) {
    if (!rdma.empty() && port_serving(sysfs, rdma, n)) return n;
  }
  if (candidates.size() == 1) return candidates.front();
  if (candidates.empty()) {
    return Error(ErrorCode::kNotFound, owner, "has no network interface")
        .with_hint("is its network driver loaded and bound?");
  }
  return Error(ErrorCode::kNotFound, owner,
               "has several network interfaces (" + join(candidates) + ") and no port of " + rdma +
                   " names one of them as its netdev")
      .with_hint("name the netdev in the configuration instead");
}

// Completes a ParentDevice whose RDMA device is known: its netdev and port.
Result<void> complete_from_rdma(const SysfsReader& sysfs, ParentDevice& pd) {
  const std::string dir = "class/infiniband/" + pd.rdma_device;
  const std::string owner = "RDMA device " + pd.rdma_device;
  if (pd.pci_address.empty()) pd.pci_address = pci_of_link(sysfs, dir + "/device");
  if (pd.netdev.empty()) {
    FABRIC_ASSIGN_OR_RETURN(auto pci_netdevs, sysfs.list(dir + "/device/net"));
    if (!pci_netdevs.empty()) {
      FABRIC_ASSIGN_OR_RETURN(pd.netdev, pick_netdev(sysfs, pd.rdma_device, pci_netdevs, owner));
    }
  }
  if (pd.netdev.empty()) {
    // Soft-RoCE has no PCI function; rxe publishes the netdev it was created on.
    FABRIC_ASSIGN_OR_RETURN(auto parent, sysfs.read_optional(dir + "/parent"));
    if (parent && !parent->empty()) pd.netdev = *parent;
  }
  if (pd.netdev.empty()) {
    for (uint32_t p : ports_of(sysfs, pd.rdma_device)) {
      if (auto n = port_netdev(sysfs, pd.rdma_device, p)) {
        pd.netdev = *n;
        break;
      }
    }
  }
  if (pd.netdev.empty()) {
    return Error(ErrorCode::kNotFound, owner,
                 "has no network interface (no device/net, no parent, no GID with a netdev)")
        .with_hint("RoCE needs an Ethernet netdev; is this an InfiniBand or iWARP device?");
  }
  pd.rdma_port =
      port_serving(sysfs, pd.rdma_device, pd.netdev).value_or(first_port(sysfs, pd.rdma_device));
  return Ok();
}

} // namespace

Result<std::string> normalize_pci_address(const std::string& pci) {
  auto bad = [&] {
    return Error(ErrorCode::kInvalidArgument, "PCI address '" + pci + "'",
                 "expected DDDD:BB:DD.F or BB:DD.F (hexadecimal, e.g. 0000:3b:00.0)");
  };
  std::string full = pci;
  if (full.size() == 7) full = "0000:" + full;
  if (full.size() != 12 || full[4] != ':' || full[7] != ':' || full[10] != '.') return bad();
  std::string_view v(full);
  if (!is_hex(v.substr(0, 4)) || !is_hex(v.substr(5, 2)) || !is_hex(v.substr(8, 2)) ||
      !is_hex(v.substr(11, 1))) {
    return bad();
  }
  // A device number has 5 bits and a function 3.
  if (hex_value(v.substr(8, 2)).value_or(0xff) > 0x1f ||
      hex_value(v.substr(11, 1)).value_or(8) > 7) {
    return bad();
  }
  for (char& c : full)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return full;
}

Result<ParentDevice> parent_from_netdev(const SysfsReader& sysfs, const std::string& netdev) {
  FABRIC_TRY(check_component(netdev, "netdev"));
  const std::string dir = "class/net/" + netdev;
  if (!sysfs.exists(dir)) {
    return Error(ErrorCode::kNotFound, "network device " + netdev,
                 "not in " + sysfs.path("class/net"));
  }
  ParentDevice pd;
  pd.netdev = netdev;
  pd.pci_address = pci_of_link(sysfs, dir + "/device");

  FABRIC_ASSIGN_OR_RETURN(auto pci_rdma, sysfs.list(dir + "/device/infiniband"));
  for (const auto& r : pci_rdma) {
    if (port_serving(sysfs, r, netdev)) {
      pd.rdma_device = r;
      break;
    }
  }
  if (pd.rdma_device.empty() && pci_rdma.size() == 1) pd.rdma_device = pci_rdma.front();
  if (pd.rdma_device.empty() && pci_rdma.size() > 1) {
    return Error(ErrorCode::kNotFound, "network device " + netdev,
                 "its PCI function has several RDMA devices (" + join(pci_rdma) +
                     ") and no port of them names " + netdev + " as its netdev")
        .with_hint("name the RDMA device in the configuration instead");
  }
  if (pd.rdma_device.empty()) {
    FABRIC_ASSIGN_OR_RETURN(auto all, sysfs.list("class/infiniband"));
    for (const auto& r : all) {
      auto parent = sysfs.read_optional("class/infiniband/" + r + "/parent");
      if (parent.ok() && *parent && **parent == netdev) {
        pd.rdma_device = r;
        break;
      }
    }
    for (std::size_t i = 0; pd.rdma_device.empty() && i < all.size(); ++i) {
      if (port_serving(sysfs, all[i], netdev)) pd.rdma_device = all[i];
    }
  }
  if (pd.rdma_device.empty()) return pd; // a plain netdev (veth, bridge): no RDMA device
  FABRIC_TRY(complete_from_rdma(sysfs, pd));
  return pd;
}

Result<ParentDevice> parent_from_rdma_device(const SysfsReader& sysfs, const std::string& rdma) {
  FABRIC_TRY(check_component(rdma, "RDMA device"));
  if (!sysfs.exists("class/infiniband/" + rdma)) {
    FABRIC_ASSIGN_OR_RETURN(auto present, sysfs.list("class/infiniband"));
    return Error(ErrorCode::kNotFound, "RDMA device " + rdma,
                 "not in " + sysfs.path("class/infiniband") + " (present: " + join(present) + ")");
  }
  ParentDevice pd;
  pd.rdma_device = rdma;
  FABRIC_TRY(complete_from_rdma(sysfs, pd));
  return pd;
}

Result<ParentDevice> parent_from_pci_address(const SysfsReader& sysfs, const std::string& pci) {
  FABRIC_ASSIGN_OR_RETURN(std::string full, normalize_pci_address(pci));
  const std::string dir = "bus/pci/devices/" + full;
  const std::string owner = "PCI device " + full;
  if (!sysfs.exists(dir)) {
    return Error(ErrorCode::kNotFound, owner, "not in " + sysfs.path("bus/pci/devices"));
  }
  FABRIC_ASSIGN_OR_RETURN(auto netdevs, sysfs.list(dir + "/net"));
  FABRIC_ASSIGN_OR_RETURN(auto rdmas, sysfs.list(dir + "/infiniband"));
  ParentDevice pd;
  pd.pci_address = full;
  if (rdmas.size() > 1) {
    return Error(ErrorCode::kNotFound, owner,
                 "has several RDMA devices (" + join(rdmas) + "); name one of them instead");
  }
  if (rdmas.empty()) { // a NIC without RDMA: its netdev alone
    FABRIC_ASSIGN_OR_RETURN(pd.netdev, pick_netdev(sysfs, "", netdevs, owner));
    return pd;
  }
  pd.rdma_device = rdmas.front();
  FABRIC_ASSIGN_OR_RETURN(pd.netdev, pick_netdev(sysfs, pd.rdma_device, netdevs, owner));
  FABRIC_TRY(complete_from_rdma(sysfs, pd));
  return pd;
}

Result<std::string> rdma_port_state(const SysfsReader& sysfs, const std::string& rdma,
                                    uint32_t port) {
  FABRIC_TRY(check_component(rdma, "RDMA device"));
  const std::string rel = "class/infiniband/" + rdma + "/ports/" + std::to_string(port) + "/state";
  FABRIC_ASSIGN_OR_RETURN(auto text, sysfs.read_optional(rel));
  if (!text) {
    return Error(ErrorCode::kNotFound, "RDMA port " + rdma + "/" + std::to_string(port),
                 "not in " + sysfs.path("class/infiniband"));
  }
  // "4: ACTIVE": the number is ib_port_state, the word its name.
  auto colon = text->find(": ");
  return colon == std::string::npos ? *text : text->substr(colon + 2);
}

} // namespace fabric::cni
