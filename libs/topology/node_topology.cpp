#include "libs/topology/node_topology.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/rdma_sysfs.h"

namespace fabric::topo {
namespace {

// PCI classes (base class and subclass) a GPU shows as.
const std::vector<uint32_t> kGpuClasses = {0x0302, 0x0300};
// The kernel release that added dma-buf memory registration for RDMA (ib_umem_dmabuf) and
// mlx5's implementation of it.
constexpr int kDmaBufMajor = 5;
constexpr int kDmaBufMinor = 12;
// RDMA NIC drivers (their PCI driver's name) known to register dma-buf memory.
const std::vector<std::string> kDmaBufDrivers = {"mlx5_core"};
// Lines read from a driver's information file, at most.
constexpr std::size_t kMaxInfoLines = 64;

std::string under(const std::string& root, const char* folder) {
  return root == "/" ? std::string("/") + folder : root + "/" + folder;
}

// "Key:   value" lines of /proc/driver/nvidia/gpus/ADDRESS/information.
std::string info_value(const std::string& text, std::string_view key) {
  std::size_t start = 0;
  for (std::size_t line = 0; line < kMaxInfoLines && start < text.size(); ++line) {
    std::size_t end = text.find('\n', start);
    std::string_view row = std::string_view(text).substr(start, end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    if (!row.starts_with(key) || row.size() <= key.size() || row[key.size()] != ':') continue;
    row.remove_prefix(key.size() + 1);
    while (!row.empty() && std::isspace(static_cast<unsigned char>(row.front())))
      row.remove_prefix(1);
    while (!row.empty() && std::isspace(static_cast<unsigned char>(row.back())))
      row.remove_suffix(1);
    return std::string(row);
  }
  return "";
}

Result<void> add_driver_info(const SysfsReader& proc, Gpu& gpu) {
  FABRIC_ASSIGN_OR_RETURN(auto info, proc.read_optional("driver/nvidia/gpus/" +
                                                        to_string(gpu.address) + "/information"));
  if (!info) return Ok();
  gpu.model = info_value(*info, "Model");
  gpu.uuid = info_value(*info, "GPU UUID");
  return Ok();
}

// Adds the runtime's view: CUDA indexes on the GPUs sysfs shows, and any device it reports
// that sysfs does not.
void add_cuda_devices(const TopologySources& sources, const SysfsReader& sys, NodeTopology& node) {
  node.cuda.asked = true;
  auto ids = sources.cuda_bus_ids();
  if (!ids.ok()) {
    node.cuda.status = ids.error().message();
    return;
  }
  std::vector<PciAddress> devices;
  for (std::size_t i = 0; i < ids->size(); ++i) {
    auto address = parse_pci_address((*ids)[i]);
    if (!address.ok()) {
      node.cuda.status = "CUDA device " + std::to_string(i) + ": " + address.error().message();
      return;
    }
    devices.push_back(*address);
    auto it = std::find_if(node.gpus.begin(), node.gpus.end(),
                           [&](const Gpu& g) { return g.address == *address; });
    if (it == node.gpus.end()) {
      Gpu extra;
      extra.address = *address;
      if (auto f = read_pci_function(sys, *address); f.ok()) extra.pci = std::move(*f);
      node.gpus.push_back(std::move(extra));
      it = node.gpus.end() - 1;
    }
    it->cuda_index = static_cast<int>(i);
  }
  node.cuda.status =
      std::to_string(devices.size()) + " CUDA device" + (devices.size() == 1 ? "" : "s");
  node.cuda.devices = std::move(devices);
}

std::string port_state(std::string text) {
  // "4: ACTIVE" -> "ACTIVE"
  if (auto colon = text.find(": "); colon != std::string::npos) text.erase(0, colon + 2);
  return text;
}

void add_unique(std::vector<std::string>& names, const std::string& name) {
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
    names.push_back(name);
  }
}

Result<RdmaNic> read_nic(const SysfsReader& sys, const std::string& device) {
  RdmaNic nic;
  nic.rdma_device = device;
  const std::string dir = "class/infiniband/" + device;
  FABRIC_ASSIGN_OR_RETURN(auto address, rdma_device_pci(sys, device));
  if (address) {
    FABRIC_ASSIGN_OR_RETURN(nic.pci, read_pci_function(sys, *address));
  }
  FABRIC_ASSIGN_OR_RETURN(auto numbers, rdma::list_sysfs_ports(sys, device));
  for (uint32_t number : numbers) {
    RdmaPort port;
    port.number = number;
    const std::string port_dir = dir + "/ports/" + std::to_string(number);
    FABRIC_ASSIGN_OR_RETURN(auto state, sys.read_optional(port_dir + "/state"));
    port.state = port_state(state.value_or(""));
    FABRIC_ASSIGN_OR_RETURN(auto link_layer, sys.read_optional(port_dir + "/link_layer"));
    port.link_layer = link_layer.value_or("");
    FABRIC_ASSIGN_OR_RETURN(auto gids, rdma::read_sysfs_gid_table(sys, device, number));
    for (auto& g : gids) {
      if (g.type == rdma::GidType::kRoceV2) port.roce_v2_gids.push_back(g);
    }
    // The port's own netdev, if this namespace has it.
    const std::string netdev = rdma::port_netdev(gids);
    if (!netdev.empty() && sys.exists("class/net/" + netdev)) add_unique(nic.netdevs, netdev);
    nic.ports.push_back(std::move(port));
  }
  // The netdevs of the NIC's PCI function (an InfiniBand port's IPoIB netdev, a RoCE port
  // whose GID table is empty while its link is down), those this namespace has.
  if (nic.pci) {
    FABRIC_ASSIGN_OR_RETURN(auto names, sys.list(dir + "/device/net"));
    for (const auto& name : names) {
      if (sys.exists("class/net/" + name)) add_unique(nic.netdevs, name);
    }
  }
  return nic;
}

bool module_loaded(const SysfsReader& sys, const SysfsReader& proc, const std::string& name) {
  if (sys.exists("module/" + name)) return true;
  auto modules = proc.read_optional("modules");
  return modules.ok() && *modules &&
         ((*modules)->starts_with(name + " ") ||
          (*modules)->find("\n" + name + " ") != std::string::npos);
}

bool release_at_least(const std::string& release, int major, int minor) {
  int got_major = 0, got_minor = 0;
  const char* p = release.data();
  const char* end = p + release.size();
  auto [after_major, ec1] = std::from_chars(p, end, got_major);
  if (ec1 != std::errc() || after_major == end || *after_major != '.') return false;
  auto [after_minor, ec2] = std::from_chars(after_major + 1, end, got_minor);
  if (ec2 != std::errc()) return false;
  return got_major > major || (got_major == major && got_minor >= minor);
}

GpuDirectSignals read_gpudirect_signals(const SysfsReader& sys, const SysfsReader& proc) {
  GpuDirectSignals s;
  // Where NCCL looks (src/transport/net_ib/gdr.cc), and /proc/modules for the module.
  if (sys.exists("module/nvidia_peermem/version") || module_loaded(sys, proc, "nvidia_peermem")) {
    s.peer_memory = "nvidia_peermem";
  } else if (sys.exists("kernel/mm/memory_peers/nv_mem/version") ||
             sys.exists("kernel/mm/memory_peers/nv_mem_nc/version")) {
    s.peer_memory = "nv_peer_mem";
  }
  auto release = proc.read_optional("sys/kernel/osrelease");
  if (release.ok() && *release) s.kernel_release = **release;
  s.kernel_dma_buf = release_at_least(s.kernel_release, kDmaBufMajor, kDmaBufMinor);
  s.nvidia_driver = module_loaded(sys, proc, "nvidia");
  auto version = proc.read_optional("driver/nvidia/version");
  s.nvidia_open_module =
      version.ok() && *version && (*version)->find("Open Kernel") != std::string::npos;
  return s;
}

} // namespace

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei])))
        ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej])))
        ++ej;
      // Compare the numbers by length once leading zeros are skipped, then digit by digit.
      std::string_view x = std::string_view(a).substr(i, ei - i);
      std::string_view y = std::string_view(b).substr(j, ej - j);
      while (x.size() > 1 && x.front() == '0')
        x.remove_prefix(1);
      while (y.size() > 1 && y.front() == '0')
        y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

Result<std::optional<PciAddress>> rdma_device_pci(const SysfsReader& sysfs,
                                                  const std::string& rdma_device) {
  const std::string dir = "class/infiniband/" + rdma_device;
  if (!sysfs.exists(dir)) {
    return Error(ErrorCode::kNotFound, "RDMA device " + rdma_device,
                 "not in " + sysfs.path("class/infiniband"));
  }
  // Software devices (rxe, siw) have no parent device, hence no `device` link.
  if (!sysfs.exists(dir + "/device")) return std::optional<PciAddress>();
  return pci_function_of(sysfs, dir + "/device");
}

Result<PciDistance> gpu_nic_distance(const SysfsReader& sysfs, std::string_view gpu_pci_address,
                                     const std::string& rdma_device) {
  FABRIC_ASSIGN_OR_RETURN(PciAddress gpu, parse_pci_address(gpu_pci_address));
  FABRIC_ASSIGN_OR_RETURN(auto nic, rdma_device_pci(sysfs, rdma_device));
  if (!nic) {
    return Error(ErrorCode::kUnsupported, "RDMA device " + rdma_device,
                 "no PCI function (a software RDMA device): PCIe distance does not apply");
  }
  FABRIC_ASSIGN_OR_RETURN(PciFunction a, read_pci_function(sysfs, gpu));
  FABRIC_ASSIGN_OR_RETURN(PciFunction b, read_pci_function(sysfs, *nic));
  return classify(a, b);
}

Result<NodeTopology> read_node_topology(const TopologySources& sources) {
  SysfsReader sys(under(sources.root, "sys"));
  SysfsReader proc(under(sources.root, "proc"));
  NodeTopology node;

  FABRIC_ASSIGN_OR_RETURN(auto gpus, find_pci_functions(sys, kGpuClasses, kNvidiaVendor));
  for (auto& f : gpus) {
    Gpu gpu;
    gpu.address = f.address;
    gpu.pci = std::move(f);
    FABRIC_TRY(add_driver_info(proc, gpu));
    node.gpus.push_back(std::move(gpu));
  }
  if (sources.cuda_bus_ids) add_cuda_devices(sources, sys, node);
  for (std::size_t i = 0; i < node.gpus.size(); ++i)
    node.gpus[i].name = "GPU" + std::to_string(i);

  FABRIC_ASSIGN_OR_RETURN(auto devices, rdma::list_sysfs_devices(sys));
  std::sort(devices.begin(), devices.end(), natural_less);
  for (const auto& device : devices) {
    auto nic = read_nic(sys, device);
    if (!nic.ok()) return std::move(nic).error().with_context("reading RDMA device " + device);
    nic->name = "NIC" + std::to_string(node.nics.size());
    node.nics.push_back(std::move(*nic));
  }
  node.gpudirect = read_gpudirect_signals(sys, proc);
  return node;
}

std::optional<PciDistance> distance(const std::optional<PciFunction>& a,
                                    const std::optional<PciFunction>& b) {
  if (!a || !b) return std::nullopt;
  return classify(*a, *b);
}

std::optional<ClosestNics> closest_nics(const NodeTopology& node, std::size_t gpu,
                                        const std::vector<std::size_t>& among) {
  std::optional<ClosestNics> best;
  for (std::size_t n = 0; n < node.nics.size(); ++n) {
    if (!among.empty() && std::find(among.begin(), among.end(), n) == among.end()) continue;
    auto d = distance(node.gpus[gpu].pci, node.nics[n].pci);
    if (!d) continue;
    if (!best || *d < best->distance) {
      best = ClosestNics{*d, {n}};
    } else if (*d == best->distance) {
      best->nics.push_back(n);
    }
  }
  return best;
}

GpuDirectPath gpudirect_path(const NodeTopology& node, std::size_t gpu, std::size_t nic) {
  const Gpu& g = node.gpus[gpu];
  const RdmaNic& n = node.nics[nic];
  const GpuDirectSignals& s = node.gpudirect;
  GpuDirectPath path;
  if (!n.pci) {
    path.reason = n.rdma_device + " has no PCI function: a software RDMA device moves data "
                                  "through host memory";
    return path;
  }
  if (!g.pci) {
    path.reason = g.name + " is not in sysfs";
    return path;
  }
  if (!s.nvidia_driver) {
    path.reason = "the NVIDIA driver is not loaded (no nvidia module)";
    return path;
  }
  const bool dma_buf_driver = std::find(kDmaBufDrivers.begin(), kDmaBufDrivers.end(),
                                        n.pci->driver) != kDmaBufDrivers.end();
  if (!s.peer_memory.empty()) {
    path.via = s.peer_memory == "nvidia_peermem" ? "nvidia-peermem" : s.peer_memory;
  } else if (s.kernel_dma_buf && s.nvidia_open_module && dma_buf_driver) {
    path.via = "dma-buf";
  } else {
    std::vector<std::string> missing;
    if (!s.kernel_dma_buf) {
      missing.push_back("kernel " +
                        (s.kernel_release.empty() ? "release unknown" : s.kernel_release) +
                        " predates 5.12");
    }
    if (!s.nvidia_open_module) {
      missing.push_back("the NVIDIA driver is the proprietary kernel module (GPU memory is "
                        "exported as dma-buf by the open one)");
    }
    if (!dma_buf_driver) {
      missing.push_back((n.pci->driver.empty() ? std::string("no driver") : n.pci->driver) +
                        " is not known to register dma-buf memory");
    }
    std::string text = "no peer-memory module (load nvidia-peermem) and no dma-buf path: ";
    for (std::size_t i = 0; i < missing.size(); ++i)
      text += (i ? "; " : "") + missing[i];
    path.reason = text;
    return path;
  }
  path.available = true;
  const PciDistance d = classify(*g.pci, *n.pci);
  path.nccl_uses = d <= PciDistance::kPxb;
  if (!path.nccl_uses) {
    path.reason = "at " + std::string(distance_name(d)) +
                  " NCCL does not use it by default (NCCL_NET_GDR_LEVEL: up to PXB)";
  }
  return path;
}

} // namespace fabric::topo
