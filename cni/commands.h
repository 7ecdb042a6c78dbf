// The individual CNI commands behind run_plugin(), and what they share. Each returns the
// stdout document on success ("" for the commands that print nothing); on failure, an
// Error, and through `Invocation::cni_code` a code to report instead of the one the
// error's code maps to (a delegated IPAM plugin's own code, STATUS's 50).
#pragma once

#include <optional>
#include <string>

#include "cni/config.h"
#include "cni/env.h"
#include "cni/parent.h"
#include "cni/plugin.h"
#include "cni/result.h"
#include "cni/state.h"

namespace fabric::cni {

struct Invocation {
  const CniEnv& env;
  const NetConf& conf;
  const PluginContext& context;
  std::optional<int> cni_code; // set by a command to override the error's own mapping
};

Result<std::string> cmd_add(Invocation& inv);
Result<std::string> cmd_del(Invocation& inv);
Result<std::string> cmd_check(Invocation& inv);
Result<std::string> cmd_status(Invocation& inv);
Result<std::string> cmd_gc(Invocation& inv);

// --- shared by the commands ---

// The parent the configuration selects, by precedence: runtimeConfig.deviceID, deviceID,
// pciBusID (PCI address), then rdmaDevice, then master.
Result<ParentDevice> resolve_parent(const NetConf& conf, const SysfsReader& sysfs);

// The name the macvlan is created under inside the pod before it is renamed to
// CNI_IFNAME: unique per attachment, so a half-finished ADD of another attachment in the
// same pod can never collide with it.
std::string temporary_link_name(const std::string& container_id, const std::string& ifname);

// IPAM for this attachment, with `netconf` as the delegated configuration (the ADD's,
// from state, when the runtime's DEL config has lost it). Failures of the plugin keep
// its code in inv.cni_code.
Result<CniResult> ipam_add_for(Invocation& inv);
Result<void> ipam_run_for(Invocation& inv, Command command, const std::string& netconf,
                          const std::string& container_id, const std::string& ifname);

// Releases everything an attachment record describes (pod link or moved NIC, RDMA device,
// IPAM allocation, device-info file, the record). Things already gone are not errors.
// Used by DEL and GC, under the attachment's lock and, when known, the parent's. `netns`
// may be empty or gone.
//
// `recorded` is false when DEL found no state record and `record` was made up from the
// runtime's configuration: then only links that carry this attachment's mark
// (link_mark.h) are touched, so an interface that another plugin put in the pod under
// CNI_IFNAME, or a device this attachment never moved, is left alone.
Result<void> release_attachment(Invocation& inv, const AttachmentRecord& record,
                                const std::string& netns, bool recorded);

// Exclusive mode, without a record: the host name of the NIC this attachment moved, read
// from its mark, in the pod (`netns`) or back on the host. nullopt when neither has one.
std::optional<std::string> marked_host_name(const std::string& container_id,
                                            const std::string& ifname, const std::string& netns);

// GC: NICs back on the host (their pod's namespace was destroyed) that still carry the
// mark of an attachment not in `valid`: their name, MTU and alias are restored, each
// under its attachment's and its parent's locks. Returns how many; the first failure is
// an error after the others were tried.
Result<std::size_t> restore_returned_nics(Invocation& inv,
                                          const std::vector<ValidAttachment>& valid);

} // namespace fabric::cni
