// STATUS: can this plugin service an ADD right now? GC: release every recorded
// attachment the runtime no longer lists as valid.
#include <spdlog/spdlog.h>

#include "cni/commands.h"
#include "cni/ipam.h"
#include "cni/link_mark.h"
#include "cni/link_ops.h"
#include "cni/locks.h"

namespace fabric::cni {
namespace {

// The spec's "plugin not available": the runtime stops sending ADDs until STATUS passes.
constexpr int kCniPluginNotAvailable = 50;

// Links whose operstate is one of these cannot carry traffic; "unknown" (drivers that do
// not report carrier, e.g. dummy) counts as usable when the link is administratively up.
bool is_down(const LinkInfo& link) {
  return !link.admin_up || link.operstate == "down" || link.operstate == "lowerlayerdown" ||
         link.operstate == "notpresent";
}

} // namespace

Result<std::string> cmd_status(Invocation& inv) {
  auto not_available = [&](Error error) {
    inv.cni_code = kCniPluginNotAvailable;
    return std::move(error).with_context("STATUS");
  };
  auto parent = resolve_parent(inv.conf, inv.context.sysfs);
  if (!parent.ok()) return not_available(std::move(parent).error());
  auto link = get_link(parent->netdev);
  if (!link.ok()) return not_available(std::move(link).error());
  if (is_down(*link)) {
    return not_available(Error(ErrorCode::kTryAgain, "parent " + parent->netdev,
                               "is down (operstate " + link->operstate + ")"));
  }
  if (!parent->rdma_device.empty()) {
    auto state = rdma_port_state(inv.context.sysfs, parent->rdma_device, parent->rdma_port);
    if (!state.ok()) return not_available(std::move(state).error());
    if (*state != "ACTIVE") {
      return not_available(
          Error(ErrorCode::kTryAgain,
                "RDMA port " + parent->rdma_device + "/" + std::to_string(parent->rdma_port),
                "is " + *state + ", not ACTIVE"));
    }
  }
  if (inv.conf.ipam_type) {
    auto call = make_ipam_invocation(inv.conf, inv.env);
    DelegatedFailure failure;
    auto ipam = ipam_run(call, Command::kStatus, &failure);
    if (!ipam.ok() && ipam.error().code() != ErrorCode::kUnsupported) {
      if (failure.code != 0) inv.cni_code = failure.code;
      return std::move(ipam).error().with_context("STATUS: IPAM " + call.type);
    }
  }
  return std::string();
}

Result<std::string> cmd_gc(Invocation& inv) {
  const auto& conf = inv.conf;
  const auto timeout = inv.context.lock_timeout;
  StateStore store(conf.state_dir);
  FABRIC_ASSIGN_OR_RETURN(auto listed, store.list(conf.name));
  std::optional<Error> first_failure;
  auto note = [&](Error error) {
    if (!first_failure) first_failure = std::move(error);
  };
  size_t released = 0;
  for (const auto& seen : listed) {
    bool valid = false;
    for (const auto& a : conf.valid_attachments) {
      valid |= a.container_id == seen.container_id && a.ifname == seen.ifname;
    }
    if (valid) continue;
    // The listing only says which attachments to look at: each record is read again
    // under its attachment's and its parent's locks, and released as it is then (a DEL
    // may have released it meanwhile, an ADD replaced it).
    auto release = [&]() -> Result<bool> {
      FABRIC_ASSIGN_OR_RETURN(
          auto attachment_lock,
          FileLock::attachment(conf.state_dir, attachment_digest(seen.container_id, seen.ifname),
                               timeout));
      FABRIC_ASSIGN_OR_RETURN(auto now, store.load(conf.name, seen.container_id, seen.ifname));
      if (!now) return false;
      FABRIC_ASSIGN_OR_RETURN(auto parent_lock,
                              FileLock::parent(conf.state_dir, now->parent_netdev, timeout));
      spdlog::info("GC: releasing {}/{} (pod {}/{})", now->container_id, now->ifname,
                   now->pod_namespace, now->pod_name);
      FABRIC_TRY(release_attachment(inv, *now, now->netns, /*recorded=*/true));
      return true;
    };
    auto done = release();
    if (done.ok()) {
      released += *done ? 1 : 0;
    } else {
      note(std::move(done).error().with_context("GC of " + seen.container_id + "/" + seen.ifname));
    }
  }
  // NICs whose pod namespace was destroyed come back to the host carrying their mark; a
  // record may be lost, or its ADD killed, so the marks are read too.
  auto restored = restore_returned_nics(inv, conf.valid_attachments);
  if (!restored.ok()) note(std::move(restored).error());
  // The IPAM plugin's own GC catches allocations we hold no record of. Plugins before
  // spec 1.1.0 have none; the per-attachment DELs above already released ours.
  if (conf.ipam_type) {
    auto call = make_ipam_invocation(conf, inv.env);
    auto ipam = ipam_run(call, Command::kGc);
    if (!ipam.ok() && ipam.error().code() != ErrorCode::kUnsupported) {
      note(std::move(ipam).error().with_context("GC: IPAM " + call.type));
    }
  }
  spdlog::info("GC: released {} of {} recorded attachments, restored {} returned NICs", released,
               listed.size(), restored.ok() ? *restored : 0);
  if (first_failure) return std::move(*first_failure);
  return std::string();
}

} // namespace fabric::cni
