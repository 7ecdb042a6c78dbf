// Which RoCE device a configuration names, resolved from sysfs: the netdev that carries
// the pod's traffic, the RDMA device on it, its PCI address and port.
//
// A configuration may name any one of the three (netdev "ens1f0", RDMA device "mlx5_0",
// PCI address "0000:3b:00.0"); each resolver completes the others. sysfs comes through a
// SysfsReader, so tests use fixture folders.
//
// How sysfs links them:
//   PCI-backed (mlx5, ...): class/net/N/device -> the PCI function, which lists its
//     netdevs in net/ and its RDMA devices in infiniband/.
//   soft-RoCE (rxe): no PCI function of its own; class/infiniband/rxe0/parent names the
//     netdev.
//   any RoCE device: the netdev of GID index 0 of a port (the default GID) is the port's
//     own netdev; later GIDs may belong to macvlans on it.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/sysfs.h"

namespace fabric::cni {

struct ParentDevice {
  std::string netdev;
  std::string rdma_device; // "" when the netdev has no RDMA device (a veth, say)
  std::string pci_address; // "" when neither is a PCI function (rxe on virtio, veth)
  uint32_t rdma_port = 1;
};

// kNotFound naming the netdev when class/net has no such link. A netdev without an RDMA
// device is not an error here: rdma_device stays empty.
Result<ParentDevice> parent_from_netdev(const SysfsReader& sysfs, const std::string& netdev);
// kNotFound naming the device; an RDMA device whose netdev cannot be found is kNotFound too.
Result<ParentDevice> parent_from_rdma_device(const SysfsReader& sysfs, const std::string& rdma);
// `pci` as normalize_pci_address() (common/hw_address.h) reads it; kInvalidArgument when
// malformed, kNotFound naming it when absent or when it has no netdev.
Result<ParentDevice> parent_from_pci_address(const SysfsReader& sysfs, const std::string& pci);

// The port's state word from sysfs ("4: ACTIVE" -> "ACTIVE"); kNotFound naming the
// device and port.
Result<std::string> rdma_port_state(const SysfsReader& sysfs, const std::string& rdma,
                                    uint32_t port);

} // namespace fabric::cni
