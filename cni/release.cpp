// Releasing an attachment (DEL and GC): the IPAM allocation, the pod's link or the moved
// NIC, the device-info file, the record. Without a record, what the links themselves say
// (link_mark.h) decides what is ours.
#include <algorithm>
#include <cerrno>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "cni/commands.h"
#include "cni/link_mark.h"
#include "cni/link_ops.h"
#include "cni/locks.h"
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

// Shared mode: the macvlan named CNI_IFNAME in the pod, and the temporary link an ADD
// killed before its rename left. With a record, CNI_IFNAME goes when it carries this
// attachment's mark (or no mark at all but hangs off the recorded parent: a record
// written before links were marked). Without one, only what is on the configured parent
// goes (the same ifindex, in the namespace the pod knows as the host's): CNI_IFNAME when
// it carries this attachment's mark, the temporary link whatever it carries.
Result<void> release_shared_link(const AttachmentRecord& record, const std::string& netns,
                                 bool recorded) {
  if (!netns_exists(netns)) return Ok(); // the macvlan died with the namespace
  std::optional<LinkInfo> parent;
  if (!record.parent_netdev.empty()) {
    FABRIC_ASSIGN_OR_RETURN(parent, find_link(record.parent_netdev));
  }
  FABRIC_ASSIGN_OR_RETURN(UniqueFd host_ns, netns::open_current());
  const std::string temp = temporary_link_name(record.container_id, record.ifname);
  return netns::run_in(netns, [&]() -> Result<void> {
    for (const std::string& name : {record.ifname, temp}) {
      FABRIC_ASSIGN_OR_RETURN(auto link, find_link(name));
      if (!link || link->kind != "macvlan") continue;
      bool on_parent =
          parent && link->parent_ifindex == parent->ifindex && link->parent_netnsid.has_value();
      if (on_parent) {
        FABRIC_ASSIGN_OR_RETURN(auto host_id, netns_id_of(host_ns.get()));
        on_parent = host_id == link->parent_netnsid;
      }
      const bool marked = marks_attachment(link->alias, record.container_id, record.ifname);
      bool ours = on_parent && (name == temp || marked);
      if (recorded && name == record.ifname) {
        ours = marked || (on_parent && !parse_link_mark(link->alias));
      }
      if (!ours) {
        spdlog::info("leaving {} in the pod alone: not a macvlan this attachment made on {}", name,
                     record.parent_netdev);
        continue;
      }
      auto deleted = delete_link(name);
      if (!deleted.ok() && !already_gone(deleted.error())) return deleted;
    }
    return Ok();
  });
}

// A NIC back in this namespace (its pod's namespace was destroyed, or an ADD was killed
// before moving it) gets its host name, MTU and `alias` back. The kernel took it down when
// it left the namespace it was in; a NIC that never left keeps its state.
Result<void> restore_returned_nic(const LinkInfo& link, const LinkMark& mark,
                                  const std::string& alias) {
  if (mark.host_mtu && link.mtu != *mark.host_mtu) {
    FABRIC_TRY(set_link_mtu(link.name, *mark.host_mtu));
  }
  if (link.name != mark.host_name) {
    FABRIC_TRY(rename_link(link.name, mark.host_name)
                   .context("restoring the host name of the NIC returned as " + link.name));
  }
  spdlog::info("{} is back on the host under its own name", mark.host_name);
  return set_link_alias(mark.host_name, alias);
}

// The link of this namespace marked for `digest`, if any.
Result<std::optional<LinkInfo>> find_marked_link(const std::string& digest) {
  FABRIC_ASSIGN_OR_RETURN(auto links, list_links());
  for (auto& link : links) {
    auto mark = parse_link_mark(link.alias);
    if (mark && mark->attachment == digest) return std::optional<LinkInfo>(std::move(link));
  }
  return std::optional<LinkInfo>();
}

// Exclusive mode: the NIC and its RDMA device go back to the host, the NIC under its host
// name, with its host MTU and alias, and down. Found in the pod as CNI_IFNAME when the
// namespace still exists; otherwise on the host by its mark; for a record written before
// NICs were marked, by its PCI address.
Result<void> release_exclusive_link(const Invocation& inv, const AttachmentRecord& record,
                                    const std::string& netns, bool recorded) {
  const std::string digest = attachment_digest(record.container_id, record.ifname);
  // Without a record the mark names the host device; a configuration that names one too
  // must agree, or the link is not this attachment's.
  const std::string expected_host = recorded ? record.parent_netdev : inv.conf.master;
  auto expected = [&](const LinkMark& mark) {
    return !mark.host_name.empty() && (expected_host.empty() || mark.host_name == expected_host);
  };
  FABRIC_ASSIGN_OR_RETURN(UniqueFd host_ns, netns::open_current());
  const bool pod_exists = netns_exists(netns);

  std::string moved_back; // the host name, once the NIC is back
  if (pod_exists) {
    FABRIC_TRY(netns::run_in(netns, [&]() -> Result<void> {
      FABRIC_ASSIGN_OR_RETURN(auto link, find_link(record.ifname));
      if (!link) return Ok();
      auto mark = parse_link_mark(link->alias);
      const bool marked = mark && mark->attachment == digest && expected(*mark);
      const bool legacy = recorded && !mark;
      if (!marked && !legacy) {
        spdlog::info("leaving {} in the pod alone: this attachment did not move it there",
                     record.ifname);
        return Ok();
      }
      const std::string host_name = recorded ? record.parent_netdev : mark->host_name;
      int mtu = record.parent_mtu;
      if (mtu == 0 && marked && mark->host_mtu) mtu = *mark->host_mtu;
      std::string rdma_device = marked ? mark->rdma_device : std::string();
      if (recorded) rdma_device = record.rdma_device_moved ? record.rdma_device : "";
      if (!rdma_device.empty()) {
        auto moved = rdma::move_device_to_netns(rdma_device, host_ns.get());
        if (!moved.ok() && !already_gone(moved.error())) return moved;
      }
      FABRIC_TRY(set_link_up(record.ifname, false));
      if (mtu != 0 && link->mtu != mtu) FABRIC_TRY(set_link_mtu(record.ifname, mtu));
      FABRIC_TRY(move_link(record.ifname, host_ns.get(), host_name));
      moved_back = host_name;
      return Ok();
    }));
    if (!moved_back.empty()) return set_link_alias(moved_back, record.parent_alias);
  }

  // Not in the pod: the kernel brought it back when the namespace was destroyed, or an
  // ADD was killed before it moved. Its mark says what it was.
  FABRIC_ASSIGN_OR_RETURN(auto returned, find_marked_link(digest));
  if (returned) {
    auto mark = parse_link_mark(returned->alias);
    if (!expected(*mark)) {
      spdlog::warn("{} is marked for this attachment but says it was {}, not {}: left alone",
                   returned->name, mark->host_name, expected_host);
      return Ok();
    }
    if (!mark->rdma_device.empty() && pod_exists) {
      // Killed between moving the RDMA device and moving the NIC.
      auto moved = netns::run_in(
          netns, [&] { return rdma::move_device_to_netns(mark->rdma_device, host_ns.get()); });
      if (!moved.ok() && !already_gone(moved.error())) return moved;
    }
    return restore_returned_nic(*returned, *mark, record.parent_alias);
  }
  if (!recorded) return Ok();

  // A record from before NICs were marked: find the NIC by its PCI address.
  auto host_link = find_link(record.parent_netdev);
  if (host_link.ok() && *host_link) return Ok(); // already back under its own name
  if (record.pci_address.empty()) {
    spdlog::warn("the pod namespace is gone and {} has no PCI address to find it by; "
                 "it is back on the host under a kernel-chosen name",
                 record.parent_netdev);
    return Ok();
  }
  auto parent = parent_from_pci_address(inv.context.sysfs, record.pci_address);
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

} // namespace

std::optional<std::string> marked_host_name(const std::string& container_id,
                                            const std::string& ifname, const std::string& netns) {
  const std::string digest = attachment_digest(container_id, ifname);
  auto host_name = [&](const std::string& alias) -> std::optional<std::string> {
    auto mark = parse_link_mark(alias);
    if (!mark || mark->attachment != digest || mark->host_name.empty()) return std::nullopt;
    return mark->host_name;
  };
  if (netns_exists(netns)) {
    auto in_pod = netns::run_in(netns, [&] { return find_link(ifname); });
    if (in_pod.ok() && *in_pod) {
      if (auto name = host_name((*in_pod)->alias)) return name;
    }
  }
  auto on_host = find_marked_link(digest);
  if (on_host.ok() && *on_host) return host_name((*on_host)->alias);
  return std::nullopt;
}

Result<std::size_t> restore_returned_nics(Invocation& inv,
                                          const std::vector<ValidAttachment>& valid) {
  std::vector<std::string> valid_digests;
  for (const auto& a : valid)
    valid_digests.push_back(attachment_digest(a.container_id, a.ifname));
  FABRIC_ASSIGN_OR_RETURN(auto links, list_links());
  std::size_t restored = 0;
  std::optional<Error> first_failure;
  for (const auto& seen : links) {
    auto mark = parse_link_mark(seen.alias);
    if (!mark || mark->host_name.empty()) continue;
    if (std::find(valid_digests.begin(), valid_digests.end(), mark->attachment) !=
        valid_digests.end()) {
      continue;
    }
    // Under the locks an ADD of that attachment holds while it marks and moves the NIC;
    // then look again, since the link may have moved on meanwhile.
    auto restore = [&]() -> Result<bool> {
      const auto timeout = inv.context.lock_timeout;
      FABRIC_ASSIGN_OR_RETURN(auto attachment_lock,
                              FileLock::attachment(inv.conf.state_dir, mark->attachment, timeout));
      FABRIC_ASSIGN_OR_RETURN(auto parent_lock,
                              FileLock::parent(inv.conf.state_dir, mark->host_name, timeout));
      FABRIC_ASSIGN_OR_RETURN(auto now, find_marked_link(mark->attachment));
      if (!now || now->ifindex != seen.ifindex) return false;
      FABRIC_TRY(restore_returned_nic(*now, *parse_link_mark(now->alias), ""));
      return true;
    };
    spdlog::info("GC: {} carries the mark of a stale attachment ({})", seen.name, seen.alias);
    auto done = restore();
    if (done.ok()) {
      restored += *done ? 1 : 0;
    } else if (!first_failure) {
      first_failure = std::move(done).error().with_context("GC of the returned NIC " + seen.name);
    }
  }
  if (first_failure) return std::move(*first_failure);
  return restored;
}

Result<void> release_attachment(Invocation& inv, const AttachmentRecord& record,
                                const std::string& netns, bool recorded) {
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
    note(release_shared_link(record, netns, recorded), "the pod interface");
  } else {
    note(release_exclusive_link(inv, record, netns, recorded), "the moved device");
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
