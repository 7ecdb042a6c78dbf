// What fabric-cni remembers about each attachment, between ADD and DEL.
//
// One JSON file per attachment:
//   <stateDir>/networks/<network>/<containerID>:<ifname>.json
// (':' can appear in neither a container ID nor an interface name, so the file name is
// unambiguous). Written atomically (write + rename), mode 0600 under a 0700 directory:
// readable by root only. The format is documented in cni/README.md ("State files"), because
// the exporter's per-pod traffic accounting reads it: keep field names stable and bump
// kStateSchemaVersion when one changes meaning.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni/modes.h"
#include "common/result.h"

namespace fabric::cni {

inline constexpr int kStateSchemaVersion = 1;

struct AttachmentRecord {
  std::string network;
  std::string container_id;
  std::string ifname;
  std::string netns;         // the pod's namespace path at ADD time
  std::string pod_namespace; // K8S_POD_NAMESPACE, empty outside Kubernetes
  std::string pod_name;      // K8S_POD_NAME
  std::string pod_uid;       // K8S_POD_UID
  Mode mode = Mode::kShared;
  std::string cni_version;
  std::string parent_netdev; // host netdev: the macvlan's parent, or the moved NIC's name
  std::string rdma_device;   // empty when the parent has none
  uint32_t rdma_port = 1;
  std::string pci_address;
  // Exclusive mode: the NIC's MTU and alias on the host before ADD, which DEL restores
  // (0 and "" in records written before these fields existed).
  int parent_mtu = 0;
  std::string parent_alias;
  std::string mac;
  int mtu = 0;
  std::vector<std::string> ips; // CIDRs as the pod interface carries them
  // The pod's cluster-network (primary) addresses as ADD found them in the pod, for the
  // exporter's per-pod accounting: only they cross the node's netfilter. Empty in records
  // written before the field existed, or when the pod had no such interface.
  std::string primary_ifname;
  std::vector<std::string> primary_ips;
  std::optional<uint32_t> gid_index;
  std::string device_info_file;     // set when ADD wrote it
  bool device_info_created = false; // ADD created the file (DEL removes only what ADD made)
  bool rdma_device_moved = false;   // exclusive: the RDMA device went into the pod
  std::string netconf;              // the network configuration of ADD, for IPAM DEL and GC
  std::string created_at;           // RFC 3339, UTC
};

std::string render_record(const AttachmentRecord& record);
Result<AttachmentRecord> parse_record(std::string_view text, std::string_view what);

class StateStore {
public:
  explicit StateStore(std::string root);

  const std::string& root() const { return root_; }
  std::string record_path(const std::string& network, const std::string& container_id,
                          const std::string& ifname) const;

  Result<void> save(const AttachmentRecord& record) const;
  // nullopt when there is no record (a DEL after a failed or never-run ADD).
  Result<std::optional<AttachmentRecord>> load(const std::string& network,
                                               const std::string& container_id,
                                               const std::string& ifname) const;
  // Removing a missing record succeeds: DEL is idempotent.
  Result<void> remove(const std::string& network, const std::string& container_id,
                      const std::string& ifname) const;
  // Every record of `network`. A file that cannot be parsed is skipped with a warning
  // rather than failing GC for every other attachment.
  Result<std::vector<AttachmentRecord>> list(const std::string& network) const;

private:
  std::string network_dir(const std::string& network) const;
  std::string root_;
};

// The current time as RFC 3339 UTC, for created_at.
std::string now_rfc3339();

} // namespace fabric::cni
