// STATUS: can this plugin service an ADD right now? GC: release every recorded
// attachment the runtime no longer lists as valid.
#include <spdlog/spdlog.h>

#include "cni/commands.h"
#include "cni/ipam.h"
#include "cni/link_ops.h"
#include "cni/parent_lock.h"

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
  FABRIC_ASSIGN_OR_RETURN(auto records, StateStore(conf.state_dir).list(conf.name));
  std::optional<Error> first_failure;
  size_t released = 0;
  for (const auto& record : records) {
    bool valid = false;
    for (const auto& a : conf.valid_attachments) {
      valid |= a.container_id == record.container_id && a.ifname == record.ifname;
    }
    if (valid) continue;
    spdlog::info("GC: releasing {}/{} (pod {}/{})", record.container_id, record.ifname,
                 record.pod_namespace, record.pod_name);
    auto lock = ParentLock::acquire(conf.state_dir, record.parent_netdev, inv.context.lock_timeout);
    Result<void> done = lock.ok() ? release_attachment(inv, record, record.netns)
                                  : Result<void>(std::move(lock).error());
    if (done.ok()) {
      ++released;
    } else if (!first_failure) {
      first_failure = std::move(done).error().with_context("GC of " + record.container_id + "/" +
                                                           record.ifname);
    }
  }
  // The IPAM plugin's own GC catches allocations we hold no record of. Plugins before
  // spec 1.1.0 have none; the per-attachment DELs above already released ours.
  if (conf.ipam_type) {
    auto call = make_ipam_invocation(conf, inv.env);
    auto ipam = ipam_run(call, Command::kGc);
    if (!ipam.ok() && ipam.error().code() != ErrorCode::kUnsupported && !first_failure) {
      first_failure = std::move(ipam).error().with_context("GC: IPAM " + call.type);
    }
  }
  spdlog::info("GC: released {} of {} recorded attachments", released, records.size());
  if (first_failure) return std::move(*first_failure);
  return std::string();
}

} // namespace fabric::cni
