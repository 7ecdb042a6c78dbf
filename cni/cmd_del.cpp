// DEL: best effort and idempotent. It always releases the IPAM allocation (also when the
// pod's namespace is gone, CNI_NETNS is empty or no state was recorded), and nothing that
// is already gone makes it fail. Without a record it touches only links marked as this
// attachment's (link_mark.h).
#include <spdlog/spdlog.h>

#include "cni/commands.h"
#include "cni/link_mark.h"
#include "cni/locks.h"

namespace fabric::cni {

Result<std::string> cmd_del(Invocation& inv) {
  const auto& env = inv.env;
  const auto& conf = inv.conf;
  const auto timeout = inv.context.lock_timeout;
  // The attachment's lock before the record is read: an ADD of this attachment still
  // running (the runtime gave up on it) finishes first, and what DEL decides from the
  // record, or from its absence, stays true while it acts.
  FABRIC_ASSIGN_OR_RETURN(auto attachment_lock,
                          FileLock::attachment(conf.state_dir,
                                               attachment_digest(env.container_id, env.ifname),
                                               timeout));
  StateStore store(conf.state_dir);
  FABRIC_ASSIGN_OR_RETURN(auto stored, store.load(conf.name, env.container_id, env.ifname));
  const bool recorded = stored.has_value();
  // The runtime's CNI_NETNS wins; an empty one (the namespace is gone, or the runtime no
  // longer knows it) falls back to the recorded path, which release checks still exists.
  std::string netns = env.netns;

  AttachmentRecord record;
  if (recorded) {
    record = std::move(*stored);
    // The runtime's DEL config may have lost its ipam section (an edited
    // NetworkAttachmentDefinition); the ADD's config still knows what allocated the IP.
    if (conf.ipam_type) record.netconf = conf.raw;
    if (netns.empty()) netns = record.netns;
  } else {
    // No record: the ADD failed and rolled back, was killed, or never ran, or this is a
    // second DEL. Release what the runtime's config describes (the IPAM allocation) and
    // the links that carry this attachment's mark.
    spdlog::info("no state for {}/{} on network {}: releasing what the config and the links' "
                 "marks name",
                 env.container_id, env.ifname, conf.name);
    record.network = conf.name;
    record.container_id = env.container_id;
    record.ifname = env.ifname;
    record.mode = conf.mode;
    record.netconf = conf.raw;
    auto parent = resolve_parent(conf, inv.context.sysfs);
    if (parent.ok()) {
      record.parent_netdev = parent->netdev;
    } else if (conf.mode == Mode::kExclusive) {
      // The NIC is not on the host: in the pod, or back under another name.
      record.parent_netdev = marked_host_name(env.container_id, env.ifname, netns).value_or("");
    }
  }

  std::optional<FileLock> parent_lock;
  if (!record.parent_netdev.empty()) {
    FABRIC_ASSIGN_OR_RETURN(auto held,
                            FileLock::parent(conf.state_dir, record.parent_netdev, timeout));
    parent_lock.emplace(std::move(held));
  }
  // Removing a record that does not exist succeeds, so both cases end the same way.
  FABRIC_TRY(release_attachment(inv, record, netns, recorded).context("DEL"));
  return std::string();
}

} // namespace fabric::cni
