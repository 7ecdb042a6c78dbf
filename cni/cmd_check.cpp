// CHECK: the attachment is still what ADD made it: the interface with its MAC and MTU,
// the prevResult's addresses on it, in shared mode the pod's RoCE v2 GID, and the IPAM
// plugin's own CHECK.
#include <algorithm>

#include "cni/commands.h"
#include "cni/gid_wait.h"
#include "cni/link_ops.h"
#include "cni/result.h"
#include "common/netns.h"

namespace fabric::cni {
namespace {

Error check_failed(const std::string& what) {
  return Error(ErrorCode::kSystem, "CHECK", what);
}

} // namespace

Result<std::string> cmd_check(Invocation& inv) {
  const auto& env = inv.env;
  const auto& conf = inv.conf;
  FABRIC_ASSIGN_OR_RETURN(auto stored,
                          StateStore(conf.state_dir).load(conf.name, env.container_id, env.ifname));
  if (!stored) {
    return Error(ErrorCode::kNotFound, "CHECK",
                 "no attachment of " + env.ifname + " for container " + env.container_id +
                     " on network " + conf.name);
  }
  const AttachmentRecord& record = *stored;
  // parse_netconf guarantees prevResult for CHECK.
  FABRIC_ASSIGN_OR_RETURN(CniResult prev,
                          parse_result(conf.prev_result.value_or("{}")).context("prevResult"));
  std::vector<std::string> expected_ips;
  for (const auto& ip : prev.ips) {
    bool ours = !ip.interface || (*ip.interface >= 0 &&
                                  static_cast<size_t>(*ip.interface) < prev.interfaces.size() &&
                                  prev.interfaces[*ip.interface].name == env.ifname);
    if (ours) expected_ips.push_back(ip.address);
  }

  FABRIC_TRY(netns::run_in(env.netns, [&]() -> Result<void> {
    auto link = find_link(env.ifname);
    if (!link.ok()) return std::move(link).error();
    if (!*link) return check_failed("the pod has no interface " + env.ifname);
    const LinkInfo& info = **link;
    if (record.mode == Mode::kShared && info.kind != "macvlan") {
      return check_failed(env.ifname + " is a " + (info.kind.empty() ? "device" : info.kind) +
                          ", not the macvlan ADD created");
    }
    if (!record.mac.empty() && info.mac != record.mac) {
      return check_failed(env.ifname + " has MAC " + info.mac + ", ADD gave it " + record.mac);
    }
    if (record.mtu != 0 && info.mtu != record.mtu) {
      return check_failed(env.ifname + " has MTU " + std::to_string(info.mtu) + ", ADD gave it " +
                          std::to_string(record.mtu));
    }
    if (!info.admin_up) return check_failed(env.ifname + " is down");
    FABRIC_ASSIGN_OR_RETURN(auto addresses, list_addresses(env.ifname));
    for (const auto& ip : expected_ips) {
      if (std::find(addresses.begin(), addresses.end(), ip) == addresses.end()) {
        return check_failed(env.ifname + " lacks the address " + ip + " from prevResult");
      }
    }
    return Ok();
  }));

  if (record.mode == Mode::kShared && conf.gid_check != GidCheck::kOff &&
      !record.rdma_device.empty()) {
    for (const auto& ip : expected_ips) {
      std::string address = ip.substr(0, ip.find('/'));
      if (!is_ipv4_address(address)) continue;
      auto gid = wait_for_roce_v2_gid(inv.context.sysfs, record.rdma_device, record.rdma_port,
                                      address, env.ifname, conf.gid_timeout);
      if (!gid.ok()) return std::move(gid).error().with_context("CHECK");
    }
  }
  FABRIC_TRY(ipam_run_for(inv, Command::kCheck, conf.raw, env.container_id, env.ifname));
  return std::string();
}

} // namespace fabric::cni
