#include "nccltest/placement.h"

#include "libs/topology/node_topology.h"

namespace fabric::nccltest {

std::optional<std::string> gpu_nic_placement(const SysfsReader& sysfs, const RankInfo& rank) {
  if (rank.device < 0 || !rank.nic || rank.nic->source != "RDMA port rate") return std::nullopt;
  const std::string device = rank.nic->name.substr(0, rank.nic->name.find('/'));
  // nccl-tests prints the bus id without its function ("0000:07:00"); a GPU is function 0.
  std::string gpu = rank.pci_bus_id;
  if (gpu.find('.') == std::string::npos) gpu += ".0";
  auto distance = topo::gpu_nic_distance(sysfs, gpu, device);
  if (!distance.ok()) return std::nullopt;
  return std::string(topo::distance_name(*distance)) + " to " + device;
}

} // namespace fabric::nccltest
