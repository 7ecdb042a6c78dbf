// What the commands share: choosing the parent, naming the temporary link, delegating to
// IPAM. Releasing an attachment (DEL and GC) is in release.cpp.
#include <cstdio>

#include "cni/commands.h"
#include "cni/ipam.h"
#include "cni/result.h"

namespace fabric::cni {
namespace {

// The key a PCI address came from (effective_device_id's precedence), so that an error
// names what the user or the device plugin actually wrote.
std::string device_id_key(const NetConf& conf) {
  if (conf.runtime_device_id) return "runtimeConfig.deviceID";
  if (!conf.device_id.empty()) return "deviceID";
  return "pciBusID";
}

} // namespace

Result<ParentDevice> resolve_parent(const NetConf& conf, const SysfsReader& sysfs) {
  if (auto pci = effective_device_id(conf)) {
    return parent_from_pci_address(sysfs, *pci).context(device_id_key(conf) + " " + *pci);
  }
  if (!conf.rdma_device.empty()) {
    return parent_from_rdma_device(sysfs, conf.rdma_device).context("rdmaDevice");
  }
  if (!conf.master.empty()) return parent_from_netdev(sysfs, conf.master).context("master");
  return Error(ErrorCode::kInvalidConfig, "network configuration",
               "names no parent device: set master, rdmaDevice, deviceID or pciBusID");
}

std::string temporary_link_name(const std::string& container_id, const std::string& ifname) {
  // FNV-1a: stable across runs and processes, unlike std::hash.
  uint32_t hash = 2166136261u;
  for (char c : container_id + "/" + ifname) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  char name[16];
  std::snprintf(name, sizeof name, "fk%08x", hash);
  return name;
}

Result<CniResult> ipam_add_for(Invocation& inv) {
  auto call = make_ipam_invocation(inv.conf, inv.env);
  DelegatedFailure failure;
  auto result = ipam_add(call, &failure);
  if (!result.ok() && failure.code != 0) inv.cni_code = failure.code;
  return std::move(result).context("IPAM " + call.type);
}

Result<void> ipam_run_for(Invocation& inv, Command command, const std::string& netconf,
                          const std::string& container_id, const std::string& ifname) {
  // The delegated configuration may come from state (DEL without the ADD's config, GC),
  // so parse it for its ipam.type rather than trusting the current one.
  FABRIC_ASSIGN_OR_RETURN(NetConf conf, parse_netconf(netconf, Command::kDel));
  if (!conf.ipam_type) return Ok();
  CniEnv env = inv.env;
  env.container_id = container_id;
  env.ifname = ifname;
  auto call = make_ipam_invocation(conf, env);
  DelegatedFailure failure;
  auto done = ipam_run(call, command, &failure);
  if (!done.ok() && failure.code != 0) inv.cni_code = failure.code;
  return std::move(done).context("IPAM " + call.type + " " + std::string(command_name(command)));
}

} // namespace fabric::cni
