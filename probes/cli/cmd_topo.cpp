// fabric-probe topo: which GPU sits next to which RDMA NIC on PCIe, from sysfs.
#include <cstdio>
#include <memory>
#include <string>

#include "common/cli.h"
#include "common/cuda_runtime.h"
#include "probes/cli/commands.h"
#include "libs/topology/node_topology.h"
#include "probes/topology/topo_report.h"

namespace fabric::probes {
namespace {

struct TopoArgs {
  bool json = false;
  bool no_cuda = false;
  std::string root = "/";
};

int run_topo(const TopoArgs& args) {
  topo::TopologySources sources;
  sources.root = args.root;
  // The runtime describes this machine, not a folder standing in for another one.
  if (!args.no_cuda && args.root == "/") sources.cuda_bus_ids = cuda::pci_bus_ids;
  auto node = topo::read_node_topology(sources);
  if (!node.ok()) return cli::fail(kProgram, node.error());
  std::string out = args.json ? render_topology_json(*node) : render_topology_text(*node);
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

} // namespace

Subcommand add_topo_command(CLI::App& app) {
  auto args = std::make_shared<TopoArgs>();
  auto* cmd = app.add_subcommand(
      "topo", "GPUs and RDMA NICs on PCIe: the distance matrix of `nvidia-smi topo -m` "
              "(PIX/PXB/PHB/NODE/SYS) from sysfs, each GPU's closest NICs, GPUDirect RDMA");
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  cmd->add_flag("--no-cuda", args->no_cuda,
                "Do not ask the CUDA runtime for its devices (sysfs only)");
  cmd->add_option("--root", args->root,
                  "Folder that stands for / when reading sysfs and procfs (default /; the "
                  "CUDA runtime is then not asked)")
      ->check(CLI::ExistingDirectory.description(""))
      ->type_name("DIR");
  return {cmd, [args] { return run_topo(*args); }};
}

} // namespace fabric::probes
