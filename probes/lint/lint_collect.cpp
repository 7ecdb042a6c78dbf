#include "probes/lint/lint_collect.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "common/rdma_sysfs.h"
#include "common/strings.h"
#include "common/sysfs.h"
#include "libs/dcb/dcb_netlink.h"
#include "libs/host_knobs/host_knobs.h"
#include "libs/topology/gpu_visibility.h"

namespace fabric::probes {
namespace {

constexpr std::string_view kUpperPrefix = "upper_";

std::string sys_root_of(const std::string& root) {
  return root == "/" ? "/sys" : root + "/sys";
}

void add_unique(std::vector<std::string>& names, const std::string& name) {
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
    names.push_back(name);
  }
}

// The RDMA devices to look at: all, or the ones named (each must exist).
Result<std::vector<std::string>> chosen_devices(const SysfsReader& sysfs,
                                                const std::vector<std::string>& only) {
  FABRIC_ASSIGN_OR_RETURN(auto devices, rdma::list_sysfs_devices(sysfs));
  if (only.empty()) return devices;
  for (const auto& name : only) {
    if (std::find(devices.begin(), devices.end(), name) == devices.end()) {
      return Error(ErrorCode::kNotFound, "--device " + name,
                   devices.empty() ? "no RDMA device on this host"
                                   : "no such RDMA device (have: " + join(devices) + ")");
    }
  }
  // In name order, each once however often it was named.
  std::vector<std::string> chosen;
  for (const auto& device : devices) {
    if (std::find(only.begin(), only.end(), device) != only.end()) chosen.push_back(device);
  }
  return chosen;
}

bool netdev_here(const SysfsReader& sysfs, const std::string& netdev) {
  return !netdev.empty() && sysfs.exists("class/net/" + netdev);
}

Result<uint32_t> netdev_mtu(const SysfsReader& sysfs, const std::string& netdev) {
  if (!netdev_here(sysfs, netdev)) {
    return Error(ErrorCode::kNotFound, "netdev " + netdev,
                 "not in this network namespace (no " + sysfs.path("class/net/" + netdev) + ")");
  }
  FABRIC_ASSIGN_OR_RETURN(uint64_t mtu, sysfs.read_u64("class/net/" + netdev + "/mtu"));
  return static_cast<uint32_t>(mtu);
}

// The port's netdev, its VLAN/macvlan uppers (sysfs upper_* links) and the other netdevs
// its GID table names, those this namespace sees.
Result<std::vector<std::string>> netdevs_of(const SysfsReader& sysfs, const LintPort& port) {
  std::vector<std::string> names;
  if (!netdev_here(sysfs, port.netdev)) return names;
  names.push_back(port.netdev);
  FABRIC_ASSIGN_OR_RETURN(auto entries, sysfs.list("class/net/" + port.netdev));
  for (const auto& entry : entries) {
    if (!entry.starts_with(kUpperPrefix)) continue;
    std::string upper = entry.substr(kUpperPrefix.size());
    if (netdev_here(sysfs, upper)) add_unique(names, upper);
  }
  for (const auto& g : port.gids) {
    if (netdev_here(sysfs, g.netdev)) add_unique(names, g.netdev);
  }
  return names;
}

// Active and max MTU of each port from the device source, read once.
class MtuSource {
public:
  explicit MtuSource(DeviceSource* source) : source_(source) {}

  void fill(LintPort& port) {
    if (!listed_) {
      listed_ = true;
      auto devices = source_->list_devices();
      if (devices.ok()) {
        devices_ = std::move(*devices);
      } else {
        error_ = std::move(devices).error();
      }
    }
    if (error_) {
      port.active_mtu = *error_;
      return;
    }
    for (const auto& d : devices_) {
      if (d.name != port.device) continue;
      for (const auto& p : d.ports) {
        if (p.number != port.port) continue;
        port.active_mtu = p.active_mtu;
        if (p.max_mtu != 0) port.max_mtu = p.max_mtu;
        return;
      }
    }
    port.active_mtu =
        Error(ErrorCode::kNotFound, "RDMA port " + port.device + "/" + std::to_string(port.port),
              "libibverbs does not list it");
  }

private:
  DeviceSource* source_;
  bool listed_ = false;
  std::vector<rdma::DeviceInfo> devices_;
  std::optional<Error> error_;
};

Result<std::optional<std::string>>
read_cm_roce_mode(const std::string& root, const std::string& device, const std::string& netdev) {
  pfc::KnobSelection which;
  which.ecn_np = false;
  which.ecn_rp = false;
  which.cm_default_tos = false;
  which.rdma_traffic_class = false;
  pfc::HostKnobs knobs(root);
  FABRIC_ASSIGN_OR_RETURN(pfc::HostState state, knobs.read(netdev, device, which));
  return state.cm_default_roce_mode;
}

std::optional<std::string> process_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  return value ? std::optional<std::string>(value) : std::nullopt;
}

// What decides the job's GPUs: the variables, the driver's GPU list and the CUDA runtime.
topo::VisibilityInputs visibility_inputs(const topo::NodeTopology& node,
                                         const LintSources& sources) {
  auto env = sources.getenv ? sources.getenv : process_env;
  topo::VisibilityInputs v;
  v.nvidia_visible_devices = env("NVIDIA_VISIBLE_DEVICES");
  v.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES");
  if (v.nvidia_visible_devices && v.nvidia_visible_devices->starts_with("/")) {
    auto names = SysfsReader(sources.root).list(v.nvidia_visible_devices->substr(1));
    if (names.ok()) v.nvidia_device_files = std::move(*names);
  }
  SysfsReader proc(sources.root == "/" ? "/proc" : sources.root + "/proc");
  if (proc.exists("driver/nvidia/gpus")) {
    std::vector<topo::PciAddress> driver_gpus;
    for (const auto& name : proc.list("driver/nvidia/gpus").value_or(std::vector<std::string>{})) {
      if (auto a = topo::parse_pci_address(name); a.ok()) driver_gpus.push_back(*a);
    }
    v.driver_gpus = std::move(driver_gpus);
  }
  v.cuda_devices = node.cuda.devices;
  return v;
}

bool gid_names(const topo::RdmaNic& nic, const std::string& netdev) {
  for (const auto& port : nic.ports) {
    for (const auto& g : port.roce_v2_gids) {
      if (g.netdev == netdev) return true;
    }
  }
  return false;
}

// The NIC(s) `iface` sits on: the RDMA device on its PCI function, one whose GID table
// names it (a pod's macvlan), or either for a netdev below it (lower_* links: VLAN,
// macvlan in this namespace), looking at 16 netdevs at most.
Result<std::vector<std::size_t>> nics_of_interface(const topo::NodeTopology& node,
                                                   const SysfsReader& sys,
                                                   const std::string& iface) {
  constexpr std::size_t kMaxNetdevs = 16;
  constexpr std::string_view kLowerPrefix = "lower_";
  std::vector<std::string> netdevs = {iface};
  std::vector<std::size_t> found;
  for (std::size_t i = 0; i < netdevs.size() && found.empty(); ++i) {
    const std::string& netdev = netdevs[i];
    const std::string dir = "class/net/" + netdev;
    std::optional<topo::PciAddress> pci;
    if (sys.exists(dir + "/device")) {
      FABRIC_ASSIGN_OR_RETURN(pci, topo::pci_function_of(sys, dir + "/device"));
    }
    for (std::size_t n = 0; n < node.nics.size(); ++n) {
      const auto& nic = node.nics[n];
      if ((pci && nic.pci && nic.pci->address == *pci) || gid_names(nic, netdev)) {
        found.push_back(n);
      }
    }
    if (netdevs.size() < kMaxNetdevs) {
      for (const auto& entry : sys.list(dir).value_or(std::vector<std::string>{})) {
        if (entry.starts_with(kLowerPrefix)) add_unique(netdevs, entry.substr(kLowerPrefix.size()));
      }
    }
  }
  if (found.empty()) {
    return Error(ErrorCode::kNotFound, "--interface " + iface,
                 sys.exists("class/net/" + iface)
                     ? "no RDMA device serves it: no GID table names it, and neither it nor a "
                       "netdev below it sits on an RDMA NIC's PCI function"
                     : "no such netdev in this network namespace, and no GID table names it");
  }
  return found;
}

} // namespace

Result<GpuNicInputs> choose_gpus_and_nics(topo::NodeTopology node, const LintSources& sources,
                                          const std::vector<std::string>& only,
                                          const GpuNicChoice& choice) {
  SysfsReader sys(sys_root_of(sources.root));
  GpuNicInputs in;
  std::vector<topo::GpuIdentity> ids;
  for (const auto& g : node.gpus)
    ids.push_back({g.address, g.uuid});
  topo::VisibleGpus visible = topo::visible_gpus(ids, visibility_inputs(node, sources));
  in.notes = std::move(visible.notes);
  if (choice.gpu) {
    const int n = *choice.gpu;
    const std::string option = "--gpu " + std::to_string(n);
    if (node.gpus.empty()) return Error(ErrorCode::kNotFound, option, "no GPU on this node");
    if (n < 0 || static_cast<std::size_t>(n) >= visible.gpus.size()) {
      return Error(ErrorCode::kNotFound, option,
                   "the job sees " + std::to_string(visible.gpus.size()) + " GPU(s) (" +
                       visible.source + ")");
    }
    in.gpus = {visible.gpus[static_cast<std::size_t>(n)]};
    in.gpus_from = option + (visible.source == "every GPU" ? "" : " of " + visible.source);
  } else {
    in.gpus = std::move(visible.gpus);
    in.gpus_from = std::move(visible.source);
  }

  if (!only.empty()) {
    for (std::size_t n = 0; n < node.nics.size(); ++n) {
      if (std::find(only.begin(), only.end(), node.nics[n].rdma_device) != only.end()) {
        in.nics.push_back(n);
      }
    }
    in.nics_from = "--device " + join(only);
  } else if (!choice.interface.empty()) {
    FABRIC_ASSIGN_OR_RETURN(in.nics, nics_of_interface(node, sys, choice.interface));
    in.nics_from = "the NIC under --interface " + choice.interface;
  } else {
    for (std::size_t n = 0; n < node.nics.size(); ++n) {
      const auto& nic = node.nics[n];
      bool serves = !nic.netdevs.empty();
      for (const auto& port : nic.ports) {
        for (const auto& g : port.roce_v2_gids)
          serves = serves || netdev_here(sys, g.netdev);
      }
      if (serves) in.nics.push_back(n);
    }
    in.nics_from = "the RDMA NICs of this network namespace's netdevs";
    if (in.nics.empty()) {
      for (std::size_t n = 0; n < node.nics.size(); ++n)
        in.nics.push_back(n);
      in.nics_from = "every RDMA NIC";
    }
  }
  in.node = std::move(node);
  return in;
}

Result<Ipv4ByNetdev> read_ipv4_addresses() {
  ifaddrs* addrs = nullptr;
  if (::getifaddrs(&addrs) != 0) return Error::from_errno(errno, "getifaddrs");
  Ipv4ByNetdev out;
  for (ifaddrs* ifa = addrs; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    const auto* sin = reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text) == nullptr) continue;
    // An address with a label (`ip addr add ... label eth0:1`) is reported under the
    // label, which the kernel requires to start with the device name and a colon.
    std::string name = ifa->ifa_name;
    add_unique(out[name.substr(0, name.find(':'))], text);
  }
  ::freeifaddrs(addrs);
  return out;
}

Result<MemlockLimit> read_memlock_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) != 0) {
    return Error::from_errno(errno, "getrlimit(RLIMIT_MEMLOCK)");
  }
  auto value = [](rlim_t v) {
    return v == RLIM_INFINITY ? std::optional<uint64_t>() : std::optional<uint64_t>(v);
  };
  return MemlockLimit{value(limit.rlim_cur), value(limit.rlim_max)};
}

Result<MemlockLimit> parse_proc_limits_memlock(const std::string& limits) {
  // "Max locked memory         8388608              8388608              bytes"
  constexpr std::string_view kRow = "Max locked memory";
  auto row = limits.find(kRow);
  if (row == std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, "limits", "no 'Max locked memory' row");
  }
  std::string rest = limits.substr(row + kRow.size(), limits.find('\n', row) - row - kRow.size());
  std::vector<std::string> fields;
  for (std::size_t pos = 0; pos < rest.size();) {
    std::size_t begin = rest.find_first_not_of(' ', pos);
    if (begin == std::string::npos) break;
    std::size_t end = rest.find(' ', begin);
    if (end == std::string::npos) end = rest.size();
    fields.push_back(rest.substr(begin, end - begin));
    pos = end;
  }
  if (fields.size() < 2) {
    return Error(ErrorCode::kInvalidArgument, "limits", "'Max locked memory' has no soft and hard");
  }
  auto value = [](const std::string& text) -> Result<std::optional<uint64_t>> {
    if (text == "unlimited") return std::optional<uint64_t>();
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0) {
      return Error(ErrorCode::kInvalidArgument, "limits", "'" + text + "' is not a limit");
    }
    return std::optional<uint64_t>(v);
  };
  MemlockLimit limit;
  FABRIC_ASSIGN_OR_RETURN(limit.soft, value(fields[0]));
  FABRIC_ASSIGN_OR_RETURN(limit.hard, value(fields[1]));
  return limit;
}

namespace {

// With --root, the limit of the process that stands for the node's workload: the kernel's
// ROOT/proc/self/limits, never this process's own.
Result<MemlockLimit> memlock_under(const std::string& root) {
  const std::string path = root + "/proc/self/limits";
  FABRIC_ASSIGN_OR_RETURN(
      std::string text, SysfsReader(root + "/proc").read("self/limits").context("reading " + path));
  return parse_proc_limits_memlock(text).context(path);
}

// ib_core's netns_mode parameter follows `rdma system set netns`: Y shared, N exclusive.
Result<rdma::NetnsMode> netns_mode_under(const std::string& root) {
  const std::string relative = "module/ib_core/parameters/netns_mode";
  FABRIC_ASSIGN_OR_RETURN(std::string text, SysfsReader(sys_root_of(root)).read(relative));
  text = std::string(trim(text));
  if (text == "Y" || text == "1") return rdma::NetnsMode::kShared;
  if (text == "N" || text == "0") return rdma::NetnsMode::kExclusive;
  return Error(ErrorCode::kInvalidArgument, "sys/" + relative, "'" + text + "' is not Y or N");
}

} // namespace

Result<LintInputs> collect_lint_inputs(const LintSources& sources,
                                       const std::vector<std::string>& only,
                                       const GpuNicChoice& choice) {
  SysfsReader sysfs(sys_root_of(sources.root));
  LintInputs in;

  std::unique_ptr<DeviceSource> own_devices;
  DeviceSource* device_source = sources.devices;
  if (device_source == nullptr) {
    own_devices = make_verbs_device_source(sysfs);
    device_source = own_devices.get();
  }
  MtuSource mtus(device_source);

  FABRIC_ASSIGN_OR_RETURN(auto devices, chosen_devices(sysfs, only));
  for (const auto& device : devices) {
    FABRIC_ASSIGN_OR_RETURN(auto numbers, rdma::list_sysfs_ports(sysfs, device));
    for (uint32_t number : numbers) {
      LintPort port;
      port.device = device;
      port.port = number;
      const std::string dir = "class/infiniband/" + device + "/ports/" + std::to_string(number);
      FABRIC_ASSIGN_OR_RETURN(auto link_layer, sysfs.read_optional(dir + "/link_layer"));
      port.link_layer = link_layer.value_or("");
      FABRIC_ASSIGN_OR_RETURN(port.gids, rdma::read_sysfs_gid_table(sysfs, device, number));
      port.netdev = rdma::port_netdev(port.gids);
      if (is_roce_port(port)) {
        if (!port.netdev.empty()) port.netdev_mtu = netdev_mtu(sysfs, port.netdev);
        mtus.fill(port);
        FABRIC_ASSIGN_OR_RETURN(port.netdevs, netdevs_of(sysfs, port));
      }
      in.ports.push_back(std::move(port));
    }
  }

  FABRIC_ASSIGN_OR_RETURN(Ipv4ByNetdev all, sources.ipv4_addresses ? sources.ipv4_addresses()
                                                                   : read_ipv4_addresses());
  std::unique_ptr<pfc::DcbDevice> own_dcb;
  pfc::DcbDevice* dcb = sources.dcb;
  for (const auto& port : in.ports) {
    if (!is_roce_port(port)) continue;
    for (const auto& netdev : port.netdevs) {
      if (auto it = all.find(netdev); it != all.end()) in.ipv4[netdev] = it->second;
    }
    if (!port.netdev.empty() && !in.dcb.count(port.netdev)) {
      if (dcb == nullptr) {
        own_dcb = pfc::make_netlink_dcb_device();
        dcb = own_dcb.get();
      }
      in.dcb.emplace(port.netdev, dcb->read(port.netdev));
    }
    if (!in.cm_roce_mode.count(port.device)) {
      in.cm_roce_mode.emplace(port.device,
                              read_cm_roce_mode(sources.root, port.device, port.netdev));
    }
  }

  // Under a root, the process limit and the RDMA netns mode are the root's files, never
  // this process's limit or this kernel's mode mixed into another node's verdicts.
  // Addresses and DCB are the network namespace's that lint runs in (`ip netns exec`).
  const bool live = sources.root == "/";
  in.memlock = sources.memlock ? sources.memlock()
               : live          ? read_memlock_limit()
                               : memlock_under(sources.root);
  in.netns_mode = sources.netns_mode ? sources.netns_mode()
                  : live             ? rdma::get_netns_mode()
                                     : netns_mode_under(sources.root);

  // A topology that cannot be read leaves its check unknown; a choice naming nothing is
  // the user's error.
  auto node = topo::read_node_topology({sources.root, sources.cuda_bus_ids});
  if (node.ok()) {
    FABRIC_ASSIGN_OR_RETURN(in.gpu_nic,
                            choose_gpus_and_nics(std::move(*node), sources, only, choice));
  } else {
    in.gpu_nic = std::move(node).error();
  }
  return in;
}

} // namespace fabric::probes
