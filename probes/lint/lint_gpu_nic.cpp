// fabric-probe lint's gpu_nic_distance rule (see lint.h for what it checks and why).
#include <algorithm>

#include "probes/lint/lint.h"

namespace fabric::probes {
namespace {

using topo::PciDistance;

constexpr std::string_view kGpuNic = "gpu_nic_distance";

LintCheck make(Verdict verdict, std::string subject, std::string message) {
  return LintCheck{std::string(kGpuNic), verdict, std::move(subject), std::move(message)};
}

std::string nic_text(const topo::RdmaNic& nic) {
  return nic.rdma_device + (nic.pci ? " (" + topo::to_string(nic.pci->address) + ")" : "");
}

std::string nics_text(const topo::NodeTopology& node, const std::vector<std::size_t>& nics) {
  std::string out;
  for (std::size_t n : nics)
    out += (out.empty() ? "" : ", ") + nic_text(node.nics[n]);
  return out;
}

std::string numa(const topo::PciFunction& f) {
  return f.numa_node < 0 ? std::string("unknown") : std::to_string(f.numa_node);
}

// What a distance means for this pair, in a few words.
std::string where(PciDistance d, const topo::PciFunction& gpu, const topo::PciFunction& nic) {
  switch (d) {
  case PciDistance::kSelf:
  case PciDistance::kPix: return "behind the same PCIe switch";
  case PciDistance::kPxb: return "through several PCIe switches, not the host bridge";
  case PciDistance::kPhb: return "through the host bridge " + gpu.host_bridge + " (the CPU)";
  case PciDistance::kNode:
    return "across host bridges (" + gpu.host_bridge + ", " + nic.host_bridge + ") of NUMA node " +
           numa(gpu);
  case PciDistance::kSys:
    return "across sockets (NUMA node " + numa(gpu) + " to " + numa(nic) + ")";
  }
  return "";
}

std::string gpudirect_text(const topo::NodeTopology& node, std::size_t gpu, std::size_t nic) {
  auto path = topo::gpudirect_path(node, gpu, nic);
  if (!path.available) return "GPUDirect RDMA is not available either: " + path.reason;
  return "GPUDirect RDMA via " + path.via;
}

LintCheck check_gpu(const GpuNicInputs& in, std::size_t g) {
  const topo::NodeTopology& node = in.node;
  const topo::Gpu& gpu = node.gpus[g];
  const std::string subject = gpu.name + " " + topo::to_string(gpu.address);
  const std::string considered = " [NICs: " + in.nics_from + "]";
  auto closest = topo::closest_nics(node, g, in.nics);
  if (!gpu.pci) {
    return make(Verdict::kUnknown, subject,
                "the CUDA runtime reports this GPU but sysfs does not show it: no PCIe path");
  }
  if (!closest) {
    return make(Verdict::kUnknown, subject,
                "no NIC with a PCI function among " + nics_text(node, in.nics) +
                    " (software RDMA devices such as rxe move data through host memory: "
                    "PCIe distance and GPUDirect RDMA do not apply)" +
                    considered);
  }
  const PciDistance d = closest->distance;
  const topo::RdmaNic& nic = node.nics[closest->nics.front()];
  std::string found = nics_text(node, closest->nics) + " at " +
                      std::string(topo::distance_name(d)) + " from " + gpu.name + ", " +
                      where(d, *gpu.pci, *nic.pci);
  if (d <= PciDistance::kPxb) {
    return make(Verdict::kPass, subject,
                found + ": " + gpudirect_text(node, g, closest->nics.front()) + considered);
  }
  // A NIC of the node, outside the ones considered, that is closer.
  std::string better;
  if (auto best = topo::closest_nics(node, g); best && best->distance < d) {
    better = "; " + nics_text(node, best->nics) + " " + (best->nics.size() == 1 ? "is" : "are") +
             " at " + std::string(topo::distance_name(best->distance)) +
             ": attach the job's RoCE interface there (fabric-cni's parent, NCCL_IB_HCA)";
  } else {
    better = "; no RDMA NIC of this node is closer: give this rank a GPU beside a NIC, or put a "
             "NIC in a slot on " +
             gpu.name + "'s PCIe switch";
  }
  if (d == PciDistance::kPhb) {
    return make(Verdict::kWarn, subject,
                found +
                    ": NCCL leaves GPUDirect RDMA off at PHB by default and stages transfers "
                    "through host memory (NCCL_NET_GDR_LEVEL=PHB turns it on)" +
                    better + considered);
  }
  return make(Verdict::kFail, subject,
              found + ": GPUDirect RDMA is off and every transfer crosses the CPU" +
                  (d == PciDistance::kSys ? " and the socket interconnect" : "") + better +
                  considered);
}

} // namespace

std::vector<LintCheck> check_gpu_nic_distance(const Result<GpuNicInputs>& inputs) {
  if (!inputs.ok()) {
    return {make(Verdict::kUnknown, "node",
                 "GPU and NIC topology not readable: " + inputs.error().message())};
  }
  const GpuNicInputs& in = *inputs;
  std::vector<LintCheck> checks;
  for (const auto& note : in.notes)
    checks.push_back(make(Verdict::kWarn, "gpus", note));
  if (in.node.gpus.empty()) {
    checks.push_back(make(Verdict::kUnknown, "node",
                          "no GPU on this node (no NVIDIA 3D/VGA controller in "
                          "/sys/bus/pci/devices): no GPU to pair with a NIC"));
    return checks;
  }
  if (in.gpus.empty()) {
    checks.push_back(
        make(Verdict::kUnknown, "gpus", in.gpus_from + " gives the job no GPU: nothing to check"));
    return checks;
  }
  if (in.nics.empty()) {
    checks.push_back(make(Verdict::kUnknown, "node",
                          "no RDMA NIC (no /sys/class/infiniband entries): no NIC to pair with "
                          "the GPUs"));
    return checks;
  }
  for (std::size_t g : in.gpus)
    checks.push_back(check_gpu(in, g));
  return checks;
}

} // namespace fabric::probes
