// DEL: best effort and idempotent. It always releases the IPAM allocation (also when the
// pod's namespace is gone, CNI_NETNS is empty or no state was recorded), and nothing that
// is already gone makes it fail.
#include <spdlog/spdlog.h>

#include "cni/commands.h"
#include "cni/parent_lock.h"

namespace fabric::cni {

Result<std::string> cmd_del(Invocation& inv) {
  const auto& env = inv.env;
  const auto& conf = inv.conf;
  StateStore store(conf.state_dir);
  FABRIC_ASSIGN_OR_RETURN(auto stored, store.load(conf.name, env.container_id, env.ifname));

  AttachmentRecord record;
  if (stored) {
    record = std::move(*stored);
    // The runtime's DEL config may have lost its ipam section (an edited
    // NetworkAttachmentDefinition); the ADD's config still knows what allocated the IP.
    if (conf.ipam_type) record.netconf = conf.raw;
  } else {
    // No record: the ADD failed and rolled back, or never ran, or this is a second DEL.
    // Release what the runtime's config describes: the IPAM allocation, and in shared
    // mode a macvlan of that name left in the pod.
    spdlog::info("no state for {}/{} on network {}: releasing what the config names",
                 env.container_id, env.ifname, conf.name);
    record.network = conf.name;
    record.container_id = env.container_id;
    record.ifname = env.ifname;
    record.mode = conf.mode;
    record.netconf = conf.raw;
    // Without a record of what moved, an exclusive-mode DEL moves nothing: a device in
    // the pod under CNI_IFNAME might not be ours.
    if (conf.mode == Mode::kShared) {
      auto parent = resolve_parent(conf, inv.context.sysfs);
      if (parent.ok()) record.parent_netdev = parent->netdev;
    }
  }

  std::optional<ParentLock> lock;
  if (!record.parent_netdev.empty()) {
    FABRIC_ASSIGN_OR_RETURN(auto held, ParentLock::acquire(conf.state_dir, record.parent_netdev,
                                                           inv.context.lock_timeout));
    lock.emplace(std::move(held));
  }
  // The runtime's CNI_NETNS wins; an empty one (the namespace is gone, or the runtime no
  // longer knows it) falls back to the recorded path, which release checks still exists.
  std::string netns = env.netns.empty() ? record.netns : env.netns;
  // Removing a record that does not exist succeeds, so both cases end the same way.
  FABRIC_TRY(release_attachment(inv, record, netns).context("DEL"));
  return std::string();
}

} // namespace fabric::cni
