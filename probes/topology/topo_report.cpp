#include "probes/topology/topo_report.h"

#include <algorithm>
#include <cstdio>

#include "common/json.h"

namespace fabric::probes {
using topo::NodeTopology;
using topo::PciDistance;
using topo::PciFunction;
namespace {

constexpr PciDistance kLegendOrder[] = {PciDistance::kSelf, PciDistance::kSys, PciDistance::kNode,
                                        PciDistance::kPhb,  PciDistance::kPxb, PciDistance::kPix};

// GPUs, then NICs: the rows and columns of the matrix.
struct MatrixDevice {
  std::string name;
  const std::optional<PciFunction>* pci;
  bool gpu;
};

std::vector<MatrixDevice> matrix_devices(const NodeTopology& node) {
  std::vector<MatrixDevice> all;
  for (const auto& g : node.gpus)
    all.push_back({g.name, &g.pci, true});
  for (const auto& n : node.nics)
    all.push_back({n.name, &n.pci, false});
  return all;
}

std::string cell(const MatrixDevice& a, const MatrixDevice& b) {
  if (&a == &b || a.name == b.name) return "X";
  auto d = topo::distance(*a.pci, *b.pci);
  return d ? std::string(topo::distance_name(*d)) : "-";
}

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string numa_text(const std::optional<PciFunction>& pci) {
  if (!pci || pci->numa_node < 0) return "N/A";
  return std::to_string(pci->numa_node);
}

std::string hex(uint32_t value, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "%0*x", digits, value);
  return text;
}

std::string nic_names(const NodeTopology& node, const std::vector<std::size_t>& nics) {
  std::string out;
  for (std::size_t n : nics)
    out += (out.empty() ? "" : ", ") + node.nics[n].name + " " + node.nics[n].rdma_device;
  return out;
}

void append_devices(std::string& out, const NodeTopology& node) {
  if (node.gpus.empty()) {
    out += "no GPU found (no NVIDIA 3D/VGA controller in /sys/bus/pci/devices)\n";
  } else {
    out += "GPUs\n";
    for (const auto& g : node.gpus) {
      out += "  " + pad(g.name, 6) + topo::to_string(g.address) + "  ";
      if (g.pci) out += "10de:" + hex(g.pci->device, 4) + "  ";
      if (!g.model.empty()) out += g.model + "  ";
      out += "NUMA " + numa_text(g.pci);
      if (g.cuda_index) out += "  CUDA device " + std::to_string(*g.cuda_index);
      if (!g.pci) out += "  (reported by the CUDA runtime, not in sysfs)";
      out += "\n";
    }
  }
  if (node.nics.empty()) {
    out += "no RDMA NIC found (no /sys/class/infiniband entries)\n";
    return;
  }
  out += "RDMA NICs\n";
  std::size_t width = 0;
  for (const auto& n : node.nics)
    width = std::max(width, n.rdma_device.size());
  for (const auto& n : node.nics) {
    out += "  " + pad(n.name, 6) + pad(n.rdma_device, width + 2);
    if (n.pci) {
      out += topo::to_string(n.pci->address) + "  NUMA " + numa_text(n.pci);
      if (!n.pci->driver.empty()) out += "  " + n.pci->driver;
    } else {
      out += "software RDMA device, no PCI function";
    }
    for (const auto& netdev : n.netdevs)
      out += "  " + netdev;
    out += "\n";
    for (const auto& p : n.ports) {
      out += "        port " + std::to_string(p.number) + " " + p.state + " " + p.link_layer;
      if (!p.roce_v2_gids.empty()) {
        out += ", RoCE v2 GIDs:";
        for (const auto& g : p.roce_v2_gids)
          out += " " + std::to_string(g.index) + " " + g.gid;
      }
      out += "\n";
    }
  }
}

void append_matrix(std::string& out, const NodeTopology& node) {
  const auto all = matrix_devices(node);
  // nvidia-smi separates its columns with tabs: eight columns wide, at least.
  std::size_t width = 8;
  for (const auto& e : all)
    width = std::max(width, e.name.size() + 2);
  std::size_t affinity_width = 14;
  for (const auto& g : node.gpus) {
    if (g.pci) affinity_width = std::max(affinity_width, g.pci->local_cpulist.size() + 2);
  }
  out += "\n" + std::string(width, ' ');
  for (const auto& e : all)
    out += pad(e.name, width);
  if (!node.gpus.empty()) out += pad("CPU Affinity", affinity_width) + "NUMA Affinity";
  // No trailing blanks on the header line either.
  while (out.back() == ' ')
    out.pop_back();
  out += "\n";
  for (const auto& row : all) {
    std::string line = pad(row.name, width);
    for (const auto& column : all)
      line += pad(cell(row, column), width);
    if (row.gpu && *row.pci) {
      line += pad((*row.pci)->local_cpulist.empty() ? "N/A" : (*row.pci)->local_cpulist,
                  affinity_width) +
              numa_text(*row.pci);
    }
    while (line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  out += "\nLegend:\n\n";
  for (PciDistance d : kLegendOrder) {
    out += "  " + pad(std::string(topo::distance_name(d)), 4) + " = " +
           std::string(topo::distance_meaning(d)) + "\n";
  }
  if (std::any_of(node.nics.begin(), node.nics.end(), [](const auto& n) { return !n.pci; })) {
    out += "  -    = No PCI function (a software RDMA device): no PCIe distance, no GPUDirect "
           "RDMA\n";
  }
  if (node.gpus.size() > 1) {
    out += "  GPU pairs show their PCIe path: NVLink (nvidia-smi's NV#) is not visible in sysfs\n";
  }
  if (!node.nics.empty()) {
    out += "\nNIC Legend:\n\n";
    for (const auto& n : node.nics)
      out += "  " + n.name + ": " + n.rdma_device + "\n";
  }
}

void append_closest(std::string& out, const NodeTopology& node) {
  if (node.gpus.empty() || node.nics.empty()) return;
  out += "\nClosest NICs:\n";
  for (std::size_t g = 0; g < node.gpus.size(); ++g) {
    auto closest = topo::closest_nics(node, g);
    out += "  " + node.gpus[g].name + ": ";
    if (!closest) {
      out += "none with a PCI function\n";
    } else {
      out += nic_names(node, closest->nics) + " (" +
             std::string(topo::distance_name(closest->distance)) + ")\n";
    }
  }
}

std::string signals_text(const topo::GpuDirectSignals& s) {
  std::string text = s.peer_memory.empty() ? "no peer-memory module" : s.peer_memory + " loaded";
  text +=
      "; kernel " + (s.kernel_release.empty() ? std::string("release unknown") : s.kernel_release);
  text += s.kernel_dma_buf ? " (dma-buf MRs: yes)" : " (dma-buf MRs: no, before 5.12)";
  if (!s.nvidia_driver) {
    text += "; NVIDIA driver not loaded";
  } else {
    text +=
        s.nvidia_open_module ? "; NVIDIA open kernel module" : "; NVIDIA proprietary kernel module";
  }
  return text;
}

void append_gpudirect(std::string& out, const NodeTopology& node) {
  if (node.gpus.empty() || node.nics.empty()) return;
  out += "\nGPUDirect RDMA: " + signals_text(node.gpudirect) + "\n";
  for (std::size_t n = 0; n < node.nics.size(); ++n) {
    std::vector<std::string> used, unused;
    std::string via, reason;
    for (std::size_t g = 0; g < node.gpus.size(); ++g) {
      auto path = topo::gpudirect_path(node, g, n);
      if (!path.available) {
        reason = path.reason;
        continue;
      }
      via = path.via;
      (path.nccl_uses ? used : unused).push_back(node.gpus[g].name);
    }
    out += "  " + node.nics[n].name + " " + node.nics[n].rdma_device + ": ";
    if (via.empty()) {
      out += "no: " + reason + "\n";
      continue;
    }
    out += "via " + via;
    auto list = [](const std::vector<std::string>& names) {
      std::string text;
      for (const auto& name : names)
        text += (text.empty() ? "" : " ") + name;
      return text;
    };
    if (!used.empty()) out += "; NCCL uses it with " + list(used);
    if (!unused.empty()) out += "; not by default with " + list(unused) + " (beyond PXB)";
    out += "\n";
  }
}

// `address` stands in when the device is not in sysfs (a GPU only the CUDA runtime reports).
void write_pci(json::Writer& w, const std::optional<PciFunction>& pci,
               std::optional<topo::PciAddress> address = std::nullopt) {
  if (pci) address = pci->address;
  w.field("pci_address",
          address ? std::optional<std::string>(topo::to_string(*address)) : std::nullopt);
  w.key("numa_node");
  if (pci && pci->numa_node >= 0) {
    w.value(pci->numa_node);
  } else {
    w.null();
  }
  w.field("cpu_affinity", pci ? std::optional<std::string>(pci->local_cpulist) : std::nullopt);
}

void write_nic(json::Writer& w, const NodeTopology& node, std::size_t n) {
  const auto& nic = node.nics[n];
  w.begin_object();
  w.field("name", nic.name);
  w.field("rdma_device", nic.rdma_device);
  write_pci(w, nic.pci);
  w.field("driver", nic.pci ? std::optional<std::string>(nic.pci->driver) : std::nullopt);
  w.key("netdevs").begin_array();
  for (const auto& netdev : nic.netdevs)
    w.value(netdev);
  w.end_array();
  w.key("ports").begin_array();
  for (const auto& p : nic.ports) {
    w.begin_object();
    w.field("port", p.number);
    w.field("state", p.state);
    w.field("link_layer", p.link_layer);
    w.key("roce_v2_gids").begin_array();
    for (const auto& g : p.roce_v2_gids) {
      w.begin_object();
      w.field("index", g.index);
      w.field("gid", g.gid);
      w.field("netdev", g.netdev);
      w.field("ipv4", g.ipv4);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("gpudirect").begin_array();
  for (std::size_t g = 0; g < node.gpus.size(); ++g) {
    auto path = topo::gpudirect_path(node, g, n);
    w.begin_object();
    w.field("gpu", node.gpus[g].name);
    w.field("available", path.available);
    w.field("via", path.via.empty() ? std::nullopt : std::optional<std::string>(path.via));
    w.field("nccl_uses", path.nccl_uses);
    w.field("reason", path.reason.empty() ? std::nullopt : std::optional<std::string>(path.reason));
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

} // namespace

std::string render_topology_text(const NodeTopology& node) {
  if (node.gpus.empty() && node.nics.empty()) return std::string(kNoGpuNoNic) + "\n";
  std::string out;
  append_devices(out, node);
  append_matrix(out, node);
  append_closest(out, node);
  append_gpudirect(out, node);
  if (node.cuda.asked) out += "\nCUDA runtime: " + node.cuda.status + "\n";
  return out;
}

std::string render_topology_json(const NodeTopology& node) {
  json::Writer w;
  w.begin_object();
  w.field("schema_version", json::kSchemaVersion);
  w.key("gpus").begin_array();
  for (std::size_t g = 0; g < node.gpus.size(); ++g) {
    const auto& gpu = node.gpus[g];
    w.begin_object();
    w.field("name", gpu.name);
    write_pci(w, gpu.pci, gpu.address);
    w.field("vendor_id",
            gpu.pci ? std::optional<std::string>("0x" + hex(gpu.pci->vendor, 4)) : std::nullopt);
    w.field("device_id",
            gpu.pci ? std::optional<std::string>("0x" + hex(gpu.pci->device, 4)) : std::nullopt);
    w.field("model", gpu.model.empty() ? std::nullopt : std::optional<std::string>(gpu.model));
    w.field("uuid", gpu.uuid.empty() ? std::nullopt : std::optional<std::string>(gpu.uuid));
    w.field("cuda_index", gpu.cuda_index);
    w.key("closest_nics");
    if (auto closest = topo::closest_nics(node, g)) {
      w.begin_object();
      w.field("distance", topo::distance_name(closest->distance));
      w.key("nics").begin_array();
      for (std::size_t n : closest->nics)
        w.value(node.nics[n].name);
      w.end_array();
      w.end_object();
    } else {
      w.null();
    }
    w.end_object();
  }
  w.end_array();
  w.key("nics").begin_array();
  for (std::size_t n = 0; n < node.nics.size(); ++n)
    write_nic(w, node, n);
  w.end_array();

  w.key("distances").begin_object();
  const auto all = matrix_devices(node);
  for (const auto& row : all) {
    w.key(row.name).begin_object();
    for (const auto& column : all) {
      std::string c = cell(row, column);
      w.key(column.name);
      if (c == "-") {
        w.null();
      } else {
        w.value(c);
      }
    }
    w.end_object();
  }
  w.end_object();

  const auto& s = node.gpudirect;
  w.key("gpudirect").begin_object();
  w.field("peer_memory",
          s.peer_memory.empty() ? std::nullopt : std::optional<std::string>(s.peer_memory));
  w.field("kernel_release",
          s.kernel_release.empty() ? std::nullopt : std::optional<std::string>(s.kernel_release));
  w.field("kernel_dma_buf", s.kernel_dma_buf);
  w.field("nvidia_driver", s.nvidia_driver);
  w.field("nvidia_open_module", s.nvidia_open_module);
  w.end_object();

  w.key("cuda").begin_object();
  w.field("asked", node.cuda.asked);
  w.field("status",
          node.cuda.status.empty() ? std::nullopt : std::optional<std::string>(node.cuda.status));
  w.key("devices");
  if (node.cuda.devices) {
    w.begin_array();
    for (const auto& a : *node.cuda.devices)
      w.value(topo::to_string(a));
    w.end_array();
  } else {
    w.null();
  }
  w.end_object();
  if (node.gpus.empty() && node.nics.empty()) w.field("message", kNoGpuNoNic);
  w.end_object();
  return w.str();
}

} // namespace fabric::probes
