// Which pod a process belongs to: its pod's UID from its cgroup path, and the pod's
// namespace and name from what the node already records about that UID.
//
// The kubelet puts every container of a pod under a cgroup named after the pod's UID,
// in one of two layouts (cgroup v1 and v2 alike; with cgroup v1 each hierarchy's line
// carries the same path):
//   cgroupfs driver: .../kubepods[/burstable|/besteffort]/pod<uid>/<container>
//   systemd driver:  .../kubepods[-burstable|-besteffort]-pod<uid with _ for ->.slice/
//                    cri-containerd-<id>.scope (or crio-, docker-)
// A reader in its own cgroup namespace sees paths relative to it ("/../../kubepods..."),
// so the pod component is looked for anywhere in the path.
//
// UID to name: fabric-cni's attachment records (cni/README.md, "State files"), which name
// the pod of every RoCE attachment, then the kubelet's pod log directories
// (/var/log/pods/<namespace>_<name>_<uid>), which exist for every pod of the node.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/sysfs.h"

namespace fabric::nccl_profiler {

struct PodRef {
  std::string pod_namespace;
  std::string pod_name;
  bool operator==(const PodRef&) const = default;
};

// The pod UID (with dashes, as the API server writes it) in the text of /proc/PID/cgroup;
// none outside a pod.
std::optional<std::string> pod_uid_from_cgroup(std::string_view cgroup);

class PodDirectory {
public:
  // Either directory may be empty (not consulted) or missing.
  PodDirectory(std::string cni_state_dir, std::string pod_log_dir);

  // Allows the next find() of an unknown UID to read the directories again; once per
  // read of the profiles is enough, as pods come and go far slower than that.
  void begin_read() { refreshed_ = false; }
  std::optional<PodRef> find(const std::string& uid);

private:
  void refresh();
  void add_cni_records();
  void add_pod_log_dirs();

  std::string cni_state_dir_;
  std::string pod_log_dir_;
  std::map<std::string, PodRef> by_uid_;
  bool refreshed_ = false;
};

// The pod UID of a process seen in `proc` (from its /proc/PID/cgroup); none when the
// process is not in a pod or has exited.
std::optional<std::string> pod_uid_of_process(const SysfsReader& proc, int64_t pid);

} // namespace fabric::nccl_profiler
