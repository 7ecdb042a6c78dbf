#include "nccltest/line_rate.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace fabric::nccltest {
namespace {

struct PortRate {
  std::string port;
  double gbps = 0;
};

// The first ACTIVE port of an RDMA device that has a readable rate.
std::optional<PortRate> active_port(const SysfsReader& sysfs, const std::string& device) {
  auto ports = sysfs.list("class/infiniband/" + device + "/ports");
  if (!ports.ok()) return std::nullopt;
  for (const std::string& port : *ports) {
    std::string base = "class/infiniband/" + device + "/ports/" + port;
    auto state = sysfs.read(base + "/state");
    if (!state.ok() || state->find("ACTIVE") == std::string::npos) continue;
    auto rate = sysfs.read(base + "/rate");
    if (!rate.ok()) continue;
    if (auto gbps = parse_port_rate(*rate)) return PortRate{port, *gbps};
  }
  return std::nullopt;
}

std::optional<NicInfo> rdma_nic(const SysfsReader& sysfs, const std::string& device) {
  auto port = active_port(sysfs, device);
  if (!port) return std::nullopt;
  return NicInfo{device + "/" + port->port, "RDMA port rate", port->gbps};
}

std::optional<NicInfo> netdev_nic(const SysfsReader& sysfs, const std::string& netdev) {
  auto speed = sysfs.read("class/net/" + netdev + "/speed");
  if (!speed.ok()) return std::nullopt;
  long mbps = 0;
  if (std::sscanf(speed->c_str(), "%ld", &mbps) != 1 || mbps <= 0) return std::nullopt;
  return NicInfo{netdev, "netdev speed", static_cast<double>(mbps) / 1000.0};
}

std::string default_route_netdev(const std::string& proc_net_route) {
  std::istringstream lines(proc_net_route);
  std::string line;
  std::getline(lines, line); // header
  while (std::getline(lines, line)) {
    char iface[64] = {}, destination[16] = {};
    if (std::sscanf(line.c_str(), "%63s %15s", iface, destination) == 2 &&
        std::string(destination) == "00000000") {
      return iface;
    }
  }
  return "";
}

// NCCL_IB_HCA's device names, in order ("mlx5_0:1,mlx5_1" -> mlx5_0, mlx5_1), and whether
// the list names the devices NCCL must not use ("^mlx5_2") rather than those it uses.
std::vector<std::string> hca_names(const std::string& value, bool& exclude) {
  std::vector<std::string> names;
  exclude = !value.empty() && value[0] == '^';
  std::string list = value;
  if (!list.empty() && (list[0] == '^' || list[0] == '=')) list = list.substr(1);
  std::istringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    std::string name = item.substr(0, item.find(':'));
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

} // namespace

std::optional<double> parse_port_rate(const std::string& text) {
  double gbps = 0;
  char unit[16] = {};
  if (std::sscanf(text.c_str(), "%lf %15s", &gbps, unit) != 2 || gbps <= 0) return std::nullopt;
  if (std::string(unit).rfind("Gb/s", 0) == 0) return gbps;
  if (std::string(unit).rfind("Mb/s", 0) == 0) return gbps / 1000.0;
  return std::nullopt;
}

Result<std::optional<NicInfo>> detect_nic(const SysfsReader& sysfs, const NicChoice& choice,
                                          const std::string& proc_net_route) {
  if (choice.requested) {
    const std::string& name = *choice.requested;
    if (sysfs.exists("class/infiniband/" + name)) {
      auto nic = rdma_nic(sysfs, name);
      if (!nic) {
        return Error(ErrorCode::kNotFound, "--nic " + name, "the RDMA device has no ACTIVE port");
      }
      return nic;
    }
    if (sysfs.exists("class/net/" + name)) {
      auto nic = netdev_nic(sysfs, name);
      if (!nic) {
        return Error(ErrorCode::kNotFound, "--nic " + name,
                     "the netdev reports no speed (virtual, or link down)");
      }
      return nic;
    }
    return Error(ErrorCode::kInvalidArgument, "--nic",
                 name + ": no RDMA device or netdev of "
                        "that name on this host");
  }
  std::vector<std::string> candidates;
  bool exclude = false;
  std::vector<std::string> named =
      choice.ib_hca ? hca_names(*choice.ib_hca, exclude) : std::vector<std::string>();
  if (!named.empty() && !exclude) {
    candidates = named;
  } else if (auto devices = sysfs.list("class/infiniband"); devices.ok()) {
    for (const std::string& d : *devices) {
      if (std::find(named.begin(), named.end(), d) == named.end()) candidates.push_back(d);
    }
  }
  std::vector<NicInfo> active;
  for (const std::string& d : candidates) {
    if (auto nic = rdma_nic(sysfs, d)) active.push_back(*nic);
  }
  if (!active.empty()) {
    // Without topology, rank i of a node takes the node's i-th NIC (wrapping around).
    return std::optional<NicInfo>(
        active[static_cast<std::size_t>(choice.local_rank) % active.size()]);
  }
  std::string netdev = default_route_netdev(proc_net_route);
  if (!netdev.empty()) return netdev_nic(sysfs, netdev);
  return std::optional<NicInfo>();
}

LineRate line_rate_ceiling(const std::vector<RankInfo>& ranks) {
  LineRate out;
  std::map<std::string, std::map<std::string, double>> nics_by_host; // host -> nic -> Gb/s
  for (const RankInfo& r : ranks) {
    auto& nics = nics_by_host[r.host];
    if (!r.nic) {
      out.basis = "no NIC speed known for rank " + std::to_string(r.rank) + " on " + r.host;
      continue;
    }
    nics[r.nic->name] = r.nic->gbps;
  }
  if (nics_by_host.size() < 2) {
    out.basis = "all ranks on one node: no traffic crosses a NIC";
    return out;
  }
  if (!out.basis.empty()) return out;
  std::string slowest;
  double slowest_gbps = 0;
  std::size_t slowest_count = 0;
  for (const auto& [host, nics] : nics_by_host) {
    double sum = 0;
    for (const auto& [name, gbps] : nics)
      sum += gbps;
    if (slowest.empty() || sum < slowest_gbps) {
      slowest = host;
      slowest_gbps = sum;
      slowest_count = nics.size();
    }
  }
  out.ceiling_gbytes = slowest_gbps / 8.0;
  char text[160];
  std::snprintf(text, sizeof text, "slowest node %s: %zu NIC%s, %g Gb/s in all", slowest.c_str(),
                slowest_count, slowest_count == 1 ? "" : "s", slowest_gbps);
  out.basis = text;
  return out;
}

} // namespace fabric::nccltest
