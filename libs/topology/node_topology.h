// The GPUs and RDMA NICs of a node, where each sits on PCIe, and whether GPUDirect RDMA can
// join them: what `fabric-probe topo` shows and `fabric-probe lint` checks, read from sysfs
// and procfs (under a root that tests point at a fixture) and, optionally, the CUDA runtime.
//
// GPUs: PCI functions of NVIDIA (0x10de) with class 3D controller (0x0302) or VGA (0x0300),
//   numbered GPU0.. in PCI address order, as nvidia-smi numbers them; model and UUID from
//   the NVIDIA driver's /proc/driver/nvidia/gpus/ADDRESS/information when it is loaded.
// NICs: every RDMA device in /sys/class/infiniband, numbered NIC0.. by name (mlx5_2 before
//   mlx5_10), each on the PCI function its `device` link leads to. A software RDMA device
//   (rxe, siw) has no such link and no PCI function: it is listed, but no PCIe distance or
//   GPUDirect RDMA applies to it, since its data goes through host memory and the CPU.
// GPUDirect RDMA needs a way to pin GPU memory for the NIC, one of:
//   a peer-memory module: nvidia-peermem (or the older nv_peer_mem), found where NCCL looks
//     (/sys/module/nvidia_peermem, /sys/kernel/mm/memory_peers/nv_mem{,_nc});
//   dma-buf: the kernel registers dma-buf memory with RDMA devices since Linux 5.12
//     (ibv_reg_dmabuf_mr), mlx5 implements it, and the NVIDIA driver exports GPU memory as
//     dma-buf only in its open kernel module ("Open Kernel" in /proc/driver/nvidia/version).
//   These are static signals: NCCL confirms them at run time (a probe registration and the
//   CUDA device attribute), so a "yes" here means "expected to work".
// And NCCL uses it by default only up to PXB (NCCL_NET_GDR_LEVEL): beyond, it stages every
// transfer through host memory.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/rdma_device.h"
#include "common/result.h"
#include "common/sysfs.h"
#include "libs/topology/pci_topology.h"

namespace fabric::topo {

inline constexpr uint32_t kNvidiaVendor = 0x10de;

struct Gpu {
  std::string name; // "GPU0"
  PciAddress address;
  // nullopt for a device the CUDA runtime reports at an address sysfs does not show.
  std::optional<PciFunction> pci;
  std::string model; // "NVIDIA H100 80GB HBM3"; "" without the driver
  std::string uuid;  // "GPU-..."; "" without the driver
  std::optional<int> cuda_index;
};

struct RdmaPort {
  uint32_t number = 0;
  std::string state;      // "ACTIVE", "DOWN", ...
  std::string link_layer; // "Ethernet" (RoCE) or "InfiniBand"
  std::vector<rdma::GidEntry> roce_v2_gids;
};

struct RdmaNic {
  std::string name;        // "NIC0"
  std::string rdma_device; // "mlx5_0"
  std::optional<PciFunction> pci;
  std::vector<std::string> netdevs; // the ports' own netdevs, as this namespace sees them
  std::vector<RdmaPort> ports;
};

struct GpuDirectSignals {
  std::string peer_memory;    // "nvidia_peermem", "nv_peer_mem", or "" when none is loaded
  std::string kernel_release; // "6.1.0-18-amd64"; "" when unreadable
  bool kernel_dma_buf = false;
  bool nvidia_driver = false;
  bool nvidia_open_module = false;
};

struct CudaDevices {
  bool asked = false;
  // The runtime's devices in its order; nullopt when it did not answer with any.
  std::optional<std::vector<PciAddress>> devices;
  std::string status; // "2 devices", "no CUDA device", "libcudart not found", ...
};

struct NodeTopology {
  std::vector<Gpu> gpus;
  std::vector<RdmaNic> nics;
  GpuDirectSignals gpudirect;
  CudaDevices cuda;
};

struct TopologySources {
  // The folder that stands for "/": sysfs under ROOT/sys, procfs under ROOT/proc.
  std::string root = "/";
  // The CUDA runtime's device addresses in its order (cuda::pci_bus_ids); not asked when
  // empty. Its errors are reported in NodeTopology::cuda, never fail the read.
  std::function<Result<std::vector<std::string>>()> cuda_bus_ids;
};

Result<NodeTopology> read_node_topology(const TopologySources& sources);

// nullopt when either side has no PCI function.
std::optional<PciDistance> distance(const std::optional<PciFunction>& a,
                                    const std::optional<PciFunction>& b);

struct ClosestNics {
  PciDistance distance = PciDistance::kSys;
  std::vector<std::size_t> nics; // indexes into NodeTopology::nics, all at `distance`
};
// The NICs nearest to GPU `gpu`, among `among` (every NIC when empty); nullopt when none
// of them has a PCI function (or the GPU has none).
std::optional<ClosestNics> closest_nics(const NodeTopology& node, std::size_t gpu,
                                        const std::vector<std::size_t>& among = {});

struct GpuDirectPath {
  bool available = false; // the kernel can let this NIC reach this GPU's memory
  std::string via;        // "nvidia-peermem", "nv_peer_mem" or "dma-buf"
  bool nccl_uses = false; // and NCCL does so by default at their distance (PIX, PXB)
  std::string reason;     // why it is not available, or why NCCL does not use it
};
GpuDirectPath gpudirect_path(const NodeTopology& node, std::size_t gpu, std::size_t nic);

// For callers that hold a GPU's PCI address (cudaDeviceGetPCIBusId) and an RDMA device's
// name (what NCCL_IB_HCA names), such as a collective's per-rank report.
Result<std::optional<PciAddress>> rdma_device_pci(const SysfsReader& sysfs,
                                                  const std::string& rdma_device);
// kUnsupported when the RDMA device has no PCI function.
Result<PciDistance> gpu_nic_distance(const SysfsReader& sysfs, std::string_view gpu_pci_address,
                                     const std::string& rdma_device);

// "mlx5_2" before "mlx5_10".
bool natural_less(const std::string& a, const std::string& b);

} // namespace fabric::topo
