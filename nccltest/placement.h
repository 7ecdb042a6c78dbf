// Where a rank's GPU sits relative to its NIC on PCIe, in the words of `nvidia-smi topo -m`
// (PIX, PXB, PHB, NODE, SYS; libs/topology/pci_topology.h): shown in the "# Using devices" lines
// and the JSON's `topology`, so a rank whose NIC is across the socket stands out where
// GPUDirect RDMA is off and its busbw low.
#pragma once

#include <optional>
#include <string>

#include "common/sysfs.h"
#include "nccltest/report.h"

namespace fabric::nccltest {

// "PXB to mlx5_0" for a GPU rank whose NIC is an RDMA device; nullopt for host memory, a
// netdev NIC, or a device whose PCI place sysfs does not show.
std::optional<std::string> gpu_nic_placement(const SysfsReader& sysfs, const RankInfo& rank);

} // namespace fabric::nccltest
