// Fills LintInputs from the system: RDMA ports, GID tables, netdev MTUs and uppers from
// sysfs; active MTUs from verbs; IPv4 addresses from getifaddrs; DCB state over netlink;
// rdma_cm's default RoCE mode from configfs (pfc::HostKnobs); RLIMIT_MEMLOCK; the RDMA
// netns mode over RDMA netlink; GPUs and NICs on PCIe (topo::read_node_topology) and the
// GPU choice from the environment. Each source can be replaced, so that tests run the
// collector over a fixture folder and fakes.
//
// A setting that cannot be read is recorded in LintInputs as an error for its check to
// report (unknown); only what makes the whole snapshot meaningless is an error here: an
// unreadable device list, a --device that does not exist, getifaddrs failing.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "libs/dcb/dcb_config.h"
#include "probes/devices/device_source.h"
#include "probes/lint/lint.h"

namespace fabric::probes {

using Ipv4ByNetdev = std::map<std::string, std::vector<std::string>>;

struct LintSources {
  // The folder that stands for "/": sysfs is read under ROOT/sys, RDMA-CM's configfs
  // under ROOT/sys/kernel/config, the memlock limit from ROOT/proc/self/limits and the
  // RDMA netns mode from ROOT/sys/module/ib_core/parameters/netns_mode.
  std::string root = "/";
  // Where the ports' active and max MTUs come from; nullptr: libibverbs.
  DeviceSource* devices = nullptr;
  // DCB netlink; nullptr: the real one, in the calling thread's network namespace.
  pfc::DcbDevice* dcb = nullptr;
  // Each is the real reader when left empty.
  std::function<Result<Ipv4ByNetdev>()> ipv4_addresses;
  std::function<Result<MemlockLimit>()> memlock;
  std::function<Result<rdma::NetnsMode>()> netns_mode;
  // The environment (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES); empty: the process's.
  std::function<std::optional<std::string>(const std::string&)> getenv;
  // The CUDA runtime's device addresses (cuda::pci_bus_ids); not asked when empty.
  std::function<Result<std::vector<std::string>>()> cuda_bus_ids;
};

// The GPU and NIC gpu_nic_distance looks at, when the user names them.
struct GpuNicChoice {
  std::optional<int> gpu; // --gpu N: the job's CUDA device N
  std::string interface;  // --interface IFACE: the NIC that IFACE sits on
};

// `only` restricts the RDMA devices (all when empty); a name that does not exist is a
// kNotFound error listing those that do, as is a --gpu or --interface that names nothing.
Result<LintInputs> collect_lint_inputs(const LintSources& sources,
                                       const std::vector<std::string>& only = {},
                                       const GpuNicChoice& choice = {});

// The GPUs and NICs of `node` that gpu_nic_distance checks (see lint.h).
Result<GpuNicInputs> choose_gpus_and_nics(topo::NodeTopology node, const LintSources& sources,
                                          const std::vector<std::string>& only,
                                          const GpuNicChoice& choice);

// The IPv4 addresses of every netdev in the calling thread's network namespace.
Result<Ipv4ByNetdev> read_ipv4_addresses();
// getrlimit(RLIMIT_MEMLOCK).
Result<MemlockLimit> read_memlock_limit();
// The "Max locked memory" row of a /proc/PID/limits file.
Result<MemlockLimit> parse_proc_limits_memlock(const std::string& limits);

} // namespace fabric::probes
