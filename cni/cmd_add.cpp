// ADD: attach the pod to the parameter plane, or leave nothing behind.
//
// Shared mode:  macvlan on the parent, created inside the pod under a temporary name,
//               marked (link_mark.h), renamed to CNI_IFNAME, MAC, notify sysctls, IPAM,
//               addresses, up, routes, then the RoCE v2 GID check.
// Exclusive:    the parent netdev is marked with its host name and MTU, then moves into
//               the pod as CNI_IFNAME together with its RDMA device, then the same
//               address configuration.
// Every step registers its undo; any failure runs them newest first.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include <spdlog/spdlog.h>

#include "cni/commands.h"
#include "cni/device_info.h"
#include "cni/gid_wait.h"
#include "cni/ipam.h"
#include "cni/link_mark.h"
#include "cni/link_ops.h"
#include "cni/locks.h"
#include "cni/result.h"
#include "cni/rollback.h"
#include "cni/sysctl.h"
#include "common/atomic_file.h"
#include "common/netns.h"
#include "common/rdma_netlink.h"

namespace fabric::cni {
namespace {

std::string arg_or_empty(const CniEnv& env, const char* key) {
  auto it = env.args.find(key);
  return it == env.args.end() ? "" : it->second;
}

std::string address_of(const std::string& cidr) {
  return cidr.substr(0, cidr.find('/'));
}

bool is_ipv4_cidr(const std::string& cidr) {
  return is_ipv4_address(address_of(cidr));
}

// Runs `fn` in the pod's namespace, naming the namespace in any error.
template <typename Fn> auto in_pod(const std::string& netns, Fn&& fn) {
  return netns::run_in(netns, std::forward<Fn>(fn));
}

// arp_notify / ndisc_notify make the kernel announce the new address and MAC when the
// link comes up, so peers' neighbour caches (and the switch) learn the pod at once rather
// than after a stale entry times out: RoCE has no retransmit-on-ARP-miss to hide that.
Result<void> set_notify_sysctls(const std::string& ifname) {
  FABRIC_TRY(write_sysctl("net/ipv4/conf/" + ifname + "/arp_notify", "1"));
  auto v6 = write_sysctl("net/ipv6/conf/" + ifname + "/ndisc_notify", "1");
  // IPv6 may be disabled in the pod (no net/ipv6/conf at all): nothing to notify then.
  if (!v6.ok() && v6.error().code() != ErrorCode::kNotFound) return v6;
  return Ok();
}

// Addresses, link up, then routes (a route via a gateway needs the link up), as the
// reference plugins' ConfigureIface does: a route without a gateway takes that of the
// first address of its family that has one, and the spec 1.1.0 fields are honoured.
Result<void> configure_addresses(const std::string& ifname, const CniResult& ipam) {
  for (const auto& ip : ipam.ips)
    FABRIC_TRY(add_address(ifname, ip.address));
  FABRIC_TRY(set_link_up(ifname, true));
  for (const auto& r : ipam.routes) {
    Route route = with_default_gateway(r, ipam.ips);
    FABRIC_TRY(add_route(ifname, RouteSpec{route.dst, route.gw, route.table, route.scope,
                                           route.priority, route.mtu, route.advmss}));
  }
  return Ok();
}

// The global addresses of the pod's cluster-network interface (link-local ones name no
// pod), read in the pod's namespace. A pod without that interface records none: ADD does
// not fail for what only the accounting needs.
Result<std::vector<std::string>> primary_addresses(const std::string& ifname) {
  FABRIC_ASSIGN_OR_RETURN(auto link, find_link(ifname));
  if (!link) {
    spdlog::info("the pod has no {}: no primary address recorded for accounting", ifname);
    return std::vector<std::string>{};
  }
  FABRIC_ASSIGN_OR_RETURN(auto all, list_addresses(ifname));
  std::vector<std::string> out;
  for (auto& cidr : all) {
    if (!cidr.starts_with("fe80:") && !cidr.starts_with("169.254.")) out.push_back(std::move(cidr));
  }
  return out;
}

// Exclusive mode takes the whole netdev from the host. A physical NIC or an SR-IOV VF is
// the pod's alone and comes back on DEL as it left; a virtual device is part of the
// host's own network (a veth's peer, a bridge's ports, a vlan's traffic), cut off while
// it is in the pod and brought back down. sysfs gives every device backed by hardware
// (PCI, virtio, platform) a `device` link; veth, bridge, dummy, vlan, macvlan, bond and
// tun have none.
Result<void> check_exclusive_parent(const SysfsReader& sysfs, const LinkInfo& parent) {
  const std::string device_link = "class/net/" + parent.name + "/device";
  if (sysfs.exists(device_link)) return Ok();
  const std::string what = parent.kind.empty() ? "a virtual device" : "a " + parent.kind;
  return Error(ErrorCode::kInvalidConfig, "mode",
               "\"exclusive\" moves a physical NIC or an SR-IOV VF into the pod, and the "
               "parent " +
                   parent.name + " is " + what + " (no " + sysfs.path(device_link) +
                   "): nothing was changed")
      .with_hint("use mode \"shared\" (a macvlan on " + parent.name +
                 "), or name a physical NIC or VF");
}

struct AddPlan {
  ParentDevice parent;
  LinkInfo parent_link;
  std::optional<std::string> mac;
};

// Everything that can be refused before anything changes: MTU, MAC, GID policy, RDMA
// namespace mode, an existing attachment. Runs under the attachment's and the parent's
// locks, so what it finds is still true when ADD acts on it.
Result<AddPlan> plan_add(Invocation& inv, ParentDevice parent, const StateStore& store) {
  const auto& conf = inv.conf;
  AddPlan plan;
  plan.parent = std::move(parent);
  FABRIC_ASSIGN_OR_RETURN(plan.parent_link,
                          get_link(plan.parent.netdev).context("the parent device"));
  if (conf.mode == Mode::kExclusive) {
    FABRIC_TRY(check_exclusive_parent(inv.context.sysfs, plan.parent_link));
  }
  if (conf.mtu && conf.mode == Mode::kShared && *conf.mtu > plan.parent_link.mtu) {
    return Error(ErrorCode::kInvalidConfig, "mtu",
                 std::to_string(*conf.mtu) + " is larger than the MTU of the parent " +
                     plan.parent.netdev + " (" + std::to_string(plan.parent_link.mtu) + ")")
        .with_hint("a macvlan cannot exceed its parent's MTU; raise the parent's first");
  }
  FABRIC_ASSIGN_OR_RETURN(plan.mac, effective_mac(conf, inv.env));
  if (conf.mode == Mode::kShared && conf.gid_check == GidCheck::kRequire &&
      plan.parent.rdma_device.empty()) {
    return Error(ErrorCode::kInvalidConfig, "gidCheck",
                 "is \"require\" but the parent " + plan.parent.netdev +
                     " has no RDMA device, so no RoCE GID can appear")
        .with_hint("name a RoCE netdev, or set gidCheck to \"warn\" or \"off\"");
  }
  if (conf.mode == Mode::kShared && conf.gid_check == GidCheck::kWarn &&
      plan.parent.rdma_device.empty()) {
    // As the README says: "warn" logs what "require" would have refused, and goes on.
    spdlog::warn("gidCheck \"warn\": the parent {} has no RDMA device, so no RoCE GID can "
                 "appear; the pod gets an interface without RDMA",
                 plan.parent.netdev);
  }
  if (conf.mode == Mode::kExclusive && !plan.parent.rdma_device.empty()) {
    FABRIC_ASSIGN_OR_RETURN(auto mode, rdma::get_netns_mode());
    if (mode != rdma::NetnsMode::kExclusive) {
      return Error(ErrorCode::kUnsupported, "mode",
                   "is \"exclusive\" but the RDMA subsystem's network namespace mode is "
                   "\"shared\": the RDMA device " +
                       plan.parent.rdma_device + " cannot follow its netdev into the pod")
          .with_hint("run `rdma system set netns exclusive` at boot (before any pod "
                     "starts), or use mode \"shared\"");
    }
  }
  FABRIC_ASSIGN_OR_RETURN(auto existing,
                          store.load(conf.name, inv.env.container_id, inv.env.ifname));
  if (existing) {
    return Error(ErrorCode::kAlreadyExists, "ADD",
                 "container " + inv.env.container_id + " already has " + inv.env.ifname +
                     " on network " + conf.name)
        .with_hint("the runtime must DEL an attachment before adding it again");
  }
  return plan;
}

Result<std::string> add_with_rollback(Invocation& inv, const AddPlan& plan, Rollback& undo,
                                      AttachmentRecord& record) {
  const auto& env = inv.env;
  const auto& conf = inv.conf;
  const std::string& ifname = env.ifname;
  FABRIC_ASSIGN_OR_RETURN(UniqueFd pod_ns, netns::open(env.netns).context(kEnvNetns));
  // Undo steps run after this function returns: they share ownership of the host fd.
  FABRIC_ASSIGN_OR_RETURN(UniqueFd host_fd, netns::open_current());
  auto host_ns = std::make_shared<UniqueFd>(std::move(host_fd));

  // The name must be free in the pod before we create or move anything under it.
  FABRIC_ASSIGN_OR_RETURN(auto clash, in_pod(env.netns, [&] { return find_link(ifname); }));
  if (clash) {
    return Error(ErrorCode::kAlreadyExists, kEnvIfname,
                 "the pod's network namespace already has an interface named " + ifname);
  }

  if (conf.mode == Mode::kShared) {
    std::string temp = temporary_link_name(env.container_id, ifname);
    FABRIC_TRY(create_macvlan(plan.parent.netdev, pod_ns.get(), temp, conf.macvlan_mode, conf.mtu));
    // Until the rename succeeds the link has its temporary name; deleting "whichever
    // exists" covers both.
    undo.add("macvlan " + ifname + " in the pod", [netns = env.netns, temp, ifname] {
      return in_pod(netns, [&]() -> Result<void> {
        for (const auto& name : {ifname, temp}) {
          auto deleted = delete_link(name);
          if (deleted.ok()) return Ok();
          if (deleted.error().code() != ErrorCode::kNotFound) return deleted;
        }
        return Ok();
      });
    });
    // The mark before the rename: a macvlan named CNI_IFNAME in the pod is one that DEL,
    // without a record, can tell apart from another plugin's.
    LinkMark mark;
    mark.attachment = attachment_digest(env.container_id, ifname);
    FABRIC_TRY(in_pod(env.netns, [&]() -> Result<void> {
      FABRIC_TRY(set_link_alias(temp, render_link_mark(mark)));
      FABRIC_TRY(rename_link(temp, ifname));
      if (plan.mac) FABRIC_TRY(set_link_mac(ifname, *plan.mac));
      return set_notify_sysctls(ifname);
    }));
  } else {
    // Exclusive: the RDMA device first (the step a driver is most likely to refuse, and
    // one that changes nothing on failure), then the NIC itself, renamed in the same
    // request. Moving a netdev drops its addresses, so it must not move unless the RDMA
    // device could follow it. Before either, the NIC gets its mark: from then on, if this
    // process is killed (the runtime's deadline), DEL and GC find on the link itself
    // what to undo.
    const std::string host_name = plan.parent.netdev;
    const int host_mtu = plan.parent_link.mtu;
    const LinkMark mark{attachment_digest(env.container_id, ifname), host_name, host_mtu,
                        plan.parent.rdma_device};
    // A mark already there is a leftover of an attachment whose undo failed: not an alias
    // to restore.
    const std::string host_alias =
        parse_link_mark(plan.parent_link.alias) ? std::string() : plan.parent_link.alias;
    FABRIC_TRY(set_link_alias(host_name, render_link_mark(mark)));
    undo.add("alias of " + host_name,
             [host_name, host_alias] { return set_link_alias(host_name, host_alias); });
    if (!plan.parent.rdma_device.empty()) {
      FABRIC_TRY(rdma::move_device_to_netns(plan.parent.rdma_device, pod_ns.get()));
      record.rdma_device_moved = true;
      undo.add("RDMA device " + plan.parent.rdma_device + " moved into the pod",
               [netns = env.netns, dev = plan.parent.rdma_device, host_ns] {
                 return in_pod(netns,
                               [&] { return rdma::move_device_to_netns(dev, host_ns->get()); });
               });
    }
    FABRIC_TRY(set_link_up(host_name, false));
    if (plan.parent_link.admin_up) {
      undo.add("netdev " + host_name + " set down",
               [host_name] { return set_link_up(host_name, true); });
    }
    FABRIC_TRY(move_link(host_name, pod_ns.get(), ifname));
    // Moving back restores the MTU too, whichever step below failed.
    undo.add("netdev " + host_name + " moved into the pod as " + ifname,
             [netns = env.netns, ifname, host_name, host_mtu, host_ns] {
               return in_pod(netns, [&]() -> Result<void> {
                 FABRIC_TRY(set_link_up(ifname, false));
                 FABRIC_ASSIGN_OR_RETURN(LinkInfo now, get_link(ifname));
                 if (now.mtu != host_mtu) FABRIC_TRY(set_link_mtu(ifname, host_mtu));
                 return move_link(ifname, host_ns->get(), host_name);
               });
             });
    FABRIC_TRY(in_pod(env.netns, [&]() -> Result<void> {
      if (conf.mtu && *conf.mtu != host_mtu) FABRIC_TRY(set_link_mtu(ifname, *conf.mtu));
      return set_notify_sysctls(ifname);
    }));
    record.parent_mtu = host_mtu;
    record.parent_alias = host_alias;
  }

  CniResult result;
  if (conf.ipam_type) {
    FABRIC_ASSIGN_OR_RETURN(CniResult ipam, ipam_add_for(inv));
    undo.add("IPAM allocation (" + *conf.ipam_type + ")", [&inv] {
      return ipam_run_for(inv, Command::kDel, inv.conf.raw, inv.env.container_id, inv.env.ifname);
    });
    result.ips = ipam.ips;
    result.routes = ipam.routes;
    result.dns = ipam.dns;
  }
  for (auto& ip : result.ips)
    ip.interface = 0;

  // In the pod: the attachment's addresses, and what the accounting needs of its primary.
  auto configure_in_pod = [&]() -> Result<LinkInfo> {
    FABRIC_TRY(configure_addresses(ifname, result));
    if (!conf.primary_interface.empty() && conf.primary_interface != ifname) {
      FABRIC_ASSIGN_OR_RETURN(record.primary_ips, primary_addresses(conf.primary_interface));
      record.primary_ifname = conf.primary_interface;
    }
    return get_link(ifname);
  };
  FABRIC_ASSIGN_OR_RETURN(LinkInfo pod_link, in_pod(env.netns, configure_in_pod));

  // The proof that RDMA from the pod's address carries the right source GID.
  std::optional<uint32_t> gid_index;
  std::string ipv4;
  for (const auto& ip : result.ips) {
    if (is_ipv4_cidr(ip.address)) {
      ipv4 = address_of(ip.address);
      break;
    }
  }
  if (conf.mode == Mode::kShared && conf.gid_check != GidCheck::kOff &&
      !plan.parent.rdma_device.empty()) {
    if (ipv4.empty()) {
      spdlog::warn("no IPv4 address from IPAM: no RoCE v2 GID to check on {}",
                   plan.parent.rdma_device);
    } else {
      auto gid = wait_for_roce_v2_gid(inv.context.sysfs, plan.parent.rdma_device,
                                      plan.parent.rdma_port, ipv4, ifname, conf.gid_timeout);
      if (gid.ok()) {
        gid_index = *gid;
        spdlog::info("RoCE v2 GID index {} on {} port {} for {} ({})", *gid,
                     plan.parent.rdma_device, plan.parent.rdma_port, ipv4, ifname);
      } else if (conf.gid_check == GidCheck::kRequire) {
        return std::move(gid).error().with_context("gidCheck \"require\"");
      } else {
        spdlog::warn("gidCheck \"warn\": {}", gid.error().message());
      }
    }
  }

  const bool device_to_describe =
      !plan.parent.pci_address.empty() || !plan.parent.rdma_device.empty();
  if (conf.device_info_file && !device_to_describe) {
    // A "pci" record without a PCI address is invalid by the spec: write nothing, and
    // leave a file someone else wrote as it is.
    spdlog::info("{} has neither a PCI function nor an RDMA device: no device-info written",
                 plan.parent.netdev);
  } else if (conf.device_info_file) {
    // Keep the previous content so a rollback restores the device plugin's file exactly.
    auto before = read_file(*conf.device_info_file);
    FABRIC_ASSIGN_OR_RETURN(auto written,
                            write_device_info(*conf.device_info_file,
                                              {plan.parent.pci_address, plan.parent.rdma_device}));
    record.device_info_file = *conf.device_info_file;
    record.device_info_created = written.created;
    undo.add("device-info file " + *conf.device_info_file,
             [path = *conf.device_info_file, created = written.created,
              old = before.ok() ? *before : std::string()]() -> Result<void> {
               if (created) {
                 if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
                   return Error::from_errno(errno, "unlink", path);
                 }
                 return Ok();
               }
               return write_file_atomic(path, old, 0644);
             });
  }

  record.network = conf.name;
  record.container_id = env.container_id;
  record.ifname = ifname;
  record.netns = env.netns;
  record.pod_namespace = arg_or_empty(env, "K8S_POD_NAMESPACE");
  record.pod_name = arg_or_empty(env, "K8S_POD_NAME");
  record.pod_uid = arg_or_empty(env, "K8S_POD_UID");
  record.mode = conf.mode;
  record.cni_version = conf.cni_version;
  record.parent_netdev = plan.parent.netdev;
  record.rdma_device = plan.parent.rdma_device;
  record.rdma_port = plan.parent.rdma_port;
  record.pci_address = plan.parent.pci_address;
  record.mac = pod_link.mac;
  record.mtu = pod_link.mtu;
  for (const auto& ip : result.ips)
    record.ips.push_back(ip.address);
  record.gid_index = gid_index;
  record.netconf = conf.raw;
  record.created_at = now_rfc3339();

  Interface pod_if;
  pod_if.name = ifname;
  pod_if.mac = pod_link.mac;
  pod_if.mtu = pod_link.mtu;
  pod_if.sandbox = env.netns;
  pod_if.pci_id = plan.parent.pci_address;
  pod_if.rdma_device = plan.parent.rdma_device;
  if (gid_index) pod_if.gid_index = static_cast<int>(*gid_index);
  result.interfaces.push_back(pod_if);
  return render_result(result, conf.cni_version);
}

} // namespace

Result<std::string> cmd_add(Invocation& inv) {
  const auto& conf = inv.conf;
  const auto timeout = inv.context.lock_timeout;
  // The attachment first, then its parent (locks.h); the plan reads devices and state
  // only once both are held.
  FABRIC_ASSIGN_OR_RETURN(
      auto attachment_lock,
      FileLock::attachment(conf.state_dir, attachment_digest(inv.env.container_id, inv.env.ifname),
                           timeout));
  FABRIC_ASSIGN_OR_RETURN(ParentDevice parent, resolve_parent(conf, inv.context.sysfs));
  FABRIC_ASSIGN_OR_RETURN(auto parent_lock,
                          FileLock::parent(conf.state_dir, parent.netdev, timeout));
  StateStore store(conf.state_dir);
  FABRIC_ASSIGN_OR_RETURN(AddPlan plan, plan_add(inv, std::move(parent), store));
  Rollback undo;
  AttachmentRecord record;
  auto output = add_with_rollback(inv, plan, undo, record);
  if (output.ok()) {
    // The record is the last step: once it exists, DEL can release everything above.
    auto saved = store.save(record);
    if (saved.ok()) {
      undo.commit();
      return output;
    }
    output = std::move(saved).error();
  }
  auto failures = undo.run();
  return with_rollback_outcome(std::move(output).error().with_context("ADD"), failures);
}

} // namespace fabric::cni
