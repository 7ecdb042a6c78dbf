// What the commands share: choosing the parent, naming the temporary link, delegating to
// IPAM, and releasing an attachment (DEL and GC).
#include <cerrno>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "cni/commands.h"
#include "cni/ipam.h"
#include "cni/link_ops.h"
#include "cni/result.h"
#include "common/netns.h"
#include "common/rdma_netlink.h"

namespace fabric::cni {
namespace {

bool already_gone(const Error& error) {
  return error.code() == ErrorCode::kNotFound;
}

// The namespace still exists and is a network namespace.
bool netns_exists(const std::string& path) {
  return !path.empty() && netns::open(path).ok();
}

Result<void> release_shared_link(const AttachmentRecord& record, const std::string& netns) {
  if (!netns_exists(netns)) return Ok(); // the macvlan died with the namespace
  return netns::run_in(netns, [&]() -> Result<void> {
    auto link = find_link(record.ifname);
    if (!link.ok()) return std::move(link).error();
    // Only our own kind of link: an interface of that name that is not a macvlan belongs
    // to someone else (another plugin's attachment), and DEL must not touch it.
    if (!*link || (*link)->kind != "macvlan") return Ok();
    auto deleted = delete_link(record.ifname);
    if (!deleted.ok() && !already_gone(deleted.error())) return deleted;
    return Ok();
  });
}

// Exclusive mode: the RDMA device and the netdev go back to the host, the netdev under
// its host name and down. When the pod's namespace is gone the kernel has already moved
// both back to the initial namespace (the netdev possibly as "devN"): find it by its
// PCI address and restore the name.
Result<void> release_exclusive_link(const AttachmentRecord& record, const std::string& netns,
                                    const SysfsReader& sysfs) {
  FABRIC_ASSIGN_OR_RETURN(UniqueFd host_ns, netns::open_current());
  if (netns_exists(netns)) {
    FABRIC_TRY(netns::run_in(netns, [&]() -> Result<void> {
      if (record.rdma_device_moved) {
        auto moved = rdma::move_device_to_netns(record.rdma_device, host_ns.get());
        if (!moved.ok() && !already_gone(moved.error())) return moved;
      }
      auto link = find_link(record.ifname);
      if (!link.ok()) return std::move(link).error();
      if (!*link) return Ok();
      FABRIC_TRY(set_link_up(record.ifname, false));
      return move_link(record.ifname, host_ns.get(), record.parent_netdev);
    }));
    return Ok();
  }
  auto host_link = find_link(record.parent_netdev);
  if (host_link.ok() && *host_link) return Ok(); // already back under its own name
  if (record.pci_address.empty()) {
    spdlog::warn("the pod namespace is gone and {} has no PCI address to find it by; "
                 "it is back on the host under a kernel-chosen name",
                 record.parent_netdev);
    return Ok();
  }
  auto parent = parent_from_pci_address(sysfs, record.pci_address);
  if (!parent.ok()) {
    if (already_gone(parent.error())) return Ok();
    return std::move(parent).error();
  }
  if (parent->netdev != record.parent_netdev) {
    FABRIC_TRY(set_link_up(parent->netdev, false));
    FABRIC_TRY(rename_link(parent->netdev, record.parent_netdev));
  }
  return Ok();
}

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

Result<void> release_attachment(Invocation& inv, const AttachmentRecord& record,
                                const std::string& netns) {
  // Every step runs even when an earlier one failed; the first real failure is returned
  // and the record is kept so that the runtime's retry can finish the job.
  std::optional<Error> first_failure;
  auto note = [&](Result<void> step, const char* what) {
    if (step.ok()) return;
    spdlog::error("releasing {} of {}/{}: {}", what, record.container_id, record.ifname,
                  step.error().message());
    if (!first_failure) first_failure = std::move(step).error().with_context(what);
  };

  // IPAM first, while the pod's interface still exists: the dhcp plugin sends its
  // DHCPRELEASE through it (the reference plugins use the same order).
  note(ipam_run_for(inv, Command::kDel, record.netconf, record.container_id, record.ifname),
       "the IPAM allocation");
  if (record.mode == Mode::kShared) {
    note(release_shared_link(record, netns), "the pod interface");
  } else {
    note(release_exclusive_link(record, netns, inv.context.sysfs), "the moved device");
  }
  if (record.device_info_created && !record.device_info_file.empty()) {
    if (::unlink(record.device_info_file.c_str()) != 0 && errno != ENOENT) {
      note(Error::from_errno(errno, "unlink", record.device_info_file), "the device-info file");
    }
  }
  if (first_failure) return std::move(*first_failure);
  return StateStore(inv.conf.state_dir).remove(record.network, record.container_id, record.ifname);
}

} // namespace fabric::cni
