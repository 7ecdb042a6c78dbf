// Renders a node's GPU/NIC topology for people (the matrix and legend of `nvidia-smi topo -m`,
// with the RDMA side nvidia-smi leaves out) and for programs (--json).
#pragma once

#include <string>

#include "libs/topology/node_topology.h"

namespace fabric::probes {

// What `topo` prints on a node with neither (also the JSON's "message").
inline constexpr const char* kNoGpuNoNic =
    "no GPU and no RDMA NIC found: nothing to pair (GPUs are NVIDIA 3D/VGA controllers in "
    "/sys/bus/pci/devices; RDMA NICs are the devices in /sys/class/infiniband)";

// The device list, the distance matrix with CPU/NUMA affinity and its legend, each GPU's
// closest NICs and GPUDirect RDMA per NIC.
std::string render_topology_text(const topo::NodeTopology& node);

// {"schema_version": 1,
//  "gpus": [{"name", "pci_address", "numa_node", "cpu_affinity", "vendor_id", "device_id",
//            "model", "uuid", "cuda_index", "closest_nics": {"distance", "nics"} | null}],
//  "nics": [{"name", "rdma_device", "pci_address" | null, "numa_node", "cpu_affinity",
//            "driver", "netdevs", "ports": [{"port", "state", "link_layer",
//            "roce_v2_gids": [{"index", "gid", "netdev", "ipv4"}]}],
//            "gpudirect": [{"gpu", "available", "via", "nccl_uses", "reason"}]}],
//  "distances": {"GPU0": {"GPU0": "X", "NIC0": "PXB", "NIC9": null, ...}, ...},
//  "gpudirect": {"peer_memory", "kernel_release", "kernel_dma_buf", "nvidia_driver",
//                "nvidia_open_module"},
//  "cuda": {"asked", "status", "devices"},
//  "message" (only when there is neither GPU nor NIC)}
// A distance is null where a side has no PCI function.
std::string render_topology_json(const topo::NodeTopology& node);

} // namespace fabric::probes
