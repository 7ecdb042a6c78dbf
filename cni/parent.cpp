#include "cni/parent.h"

#include "common/hw_address.h"
#include "common/rdma_sysfs.h"
#include "common/strings.h"

#include <optional>
#include <vector>

namespace fabric::cni {
namespace {

// Names become sysfs path components: keep "/" and ".." out.
Result<void> check_component(const std::string& name, const std::string& field) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, field, "'" + name + "' is not a device name");
  }
  return Ok();
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

uint32_t first_port(const SysfsReader& sysfs, const std::string& rdma) {
  auto ports = rdma::list_sysfs_ports(sysfs, rdma).value_or(std::vector<uint32_t>{});
  return ports.empty() ? 1 : ports.front();
}

// Of the netdevs of a PCI function, the one the RDMA device `rdma` (may be "") serves:
// by the default GID, else the only one.
Result<std::string> pick_netdev(const SysfsReader& sysfs, const std::string& rdma,
                                const std::vector<std::string>& candidates,
                                const std::string& owner) {
  for (const auto& n : candidates) {
    if (!rdma.empty() && rdma::sysfs_port_of_netdev(sysfs, rdma, n)) return n;
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
    auto ports = rdma::list_sysfs_ports(sysfs, pd.rdma_device).value_or(std::vector<uint32_t>{});
    for (uint32_t p : ports) {
      if (auto n = rdma::sysfs_port_netdev(sysfs, pd.rdma_device, p)) {
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
  pd.rdma_port = rdma::sysfs_port_of_netdev(sysfs, pd.rdma_device, pd.netdev)
                     .value_or(first_port(sysfs, pd.rdma_device));
  return Ok();
}

} // namespace

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
    if (rdma::sysfs_port_of_netdev(sysfs, r, netdev)) {
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
      if (rdma::sysfs_port_of_netdev(sysfs, all[i], netdev)) pd.rdma_device = all[i];
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
                 "not in " + sysfs.path("class/infiniband") +
                     " (present: " + (present.empty() ? "none" : join(present)) + ")");
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
