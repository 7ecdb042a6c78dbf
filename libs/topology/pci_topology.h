// Where PCI functions sit in the machine's PCIe hierarchy, read from sysfs, and how far
// apart two of them are in the vocabulary of `nvidia-smi topo -m`.
//
// The kernel publishes the hierarchy as its device tree: /sys/bus/pci/devices/BDF links to
// /sys/devices/pciDDDD:BB/<root port>/<switch upstream port>/<switch downstream port>/.../BDF,
// one folder per PCI function on the way down from the host bridge pciDDDD:BB. A PCIe switch
// shows as an upstream port with its downstream ports below it, so the functions on that
// path alternate: root port, upstream port, downstream port, upstream port, ..., device.
//
// Distances, nearest first (the legend nvidia-smi prints, and NVML's topology levels):
//   X     the function itself
//   PIX   at most one PCIe switch between them: under the same switch, or two functions of
//         one device (the ports of a dual-port NIC) below one port
//   PXB   several switches, but not through the host bridge (nested switches, as in the
//         DGX A100's two-level Broadcom switches)
//   PHB   through the host bridge: below different root ports of one host bridge
//   NODE  across host bridges within one NUMA node (one PCIe root complex per host bridge,
//         several per socket on Skylake and later, or AMD EPYC)
//   SYS   across the interconnect between NUMA nodes (UPI, xGMI)
// NCCL draws the same lines (src/graph: PATH_PIX, PATH_PXB, PATH_PHB, PATH_SYS; its XML
// walks up two levels at a time, one switch per step) except that it has no NODE: it
// merges every host bridge of a NUMA node into one CPU node and calls that path PHB. It
// also flattens Broadcom Gen4 switches, so where nvidia-smi says PXB on a DGX A100, NCCL's
// log says PIX.
//
// This file depends on fabric_common only, so that every fabrickit tool can link it.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/sysfs.h"

namespace fabric::topo {

struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0;      // 0..0xff
  uint32_t device = 0;   // 0..0x1f
  uint32_t function = 0; // 0..7
  auto operator<=>(const PciAddress&) const = default;
};

// Accepts the forms tools print: "0000:3b:00.0" (sysfs, lspci -D), "00000000:3B:00.0"
// (nvidia-smi, the CUDA runtime), "3b:00.0" (lspci: domain 0).
Result<PciAddress> parse_pci_address(std::string_view text);
// sysfs's form: "0000:3b:00.0".
std::string to_string(const PciAddress& address);

// One PCI function and its place in the hierarchy.
struct PciFunction {
  PciAddress address;
  // The host bridge above it: "pci0000:00". Functions under different host bridges meet
  // only in the CPU.
  std::string host_bridge;
  // The functions from the one just below the host bridge (a root port, or the function
  // itself when it sits on the root bus) down to this one, which is last.
  std::vector<PciAddress> chain;
  int numa_node = -1; // -1: the firmware gave none
  std::string local_cpulist;
  uint32_t class_code = 0; // 0x030200: 3D controller
  uint32_t vendor = 0;
  uint32_t device = 0;
  std::string driver; // the bound driver ("mlx5_core", "nvidia"); "" when none
};

enum class PciDistance { kSelf, kPix, kPxb, kPhb, kNode, kSys };

// "X", "PIX", "PXB", "PHB", "NODE", "SYS".
std::string_view distance_name(PciDistance distance);
// nvidia-smi's legend line for it, e.g. "Connection traversing at most a single PCIe bridge".
std::string_view distance_meaning(PciDistance distance);

// How far apart `a` and `b` are (symmetric).
PciDistance classify(const PciFunction& a, const PciFunction& b);

// The function at `address` (/sys/bus/pci/devices/ADDRESS): its chain, NUMA node, CPUs,
// class, ids and driver. kNotFound when there is no such function.
Result<PciFunction> read_pci_function(const SysfsReader& sysfs, const PciAddress& address);

// Every PCI function of one of `classes` (base class and subclass: 0x0302 for a 3D
// controller, whatever its programming interface) and, unless 0, of `vendor`; in address
// order.
Result<std::vector<PciFunction>> find_pci_functions(const SysfsReader& sysfs,
                                                    const std::vector<uint32_t>& classes,
                                                    uint32_t vendor = 0);

// The PCI function that the sysfs device at `relative` lives on: the deepest
// "DDDD:BB:DD.F" folder on its real path ("class/net/eth0" -> the NIC's function, also
// through a virtio device in between). nullopt when the path crosses no PCI function
// (virtual devices: rxe, siw, veth, bridges).
Result<std::optional<PciAddress>> pci_function_of(const SysfsReader& sysfs,
                                                  const std::string& relative);

// How far apart the functions at two addresses are, from sysfs alone.
Result<PciDistance> pci_distance(const SysfsReader& sysfs, std::string_view a, std::string_view b);

} // namespace fabric::topo
