// fabric-cni's attachment record: what it remembers about one attachment between ADD and
// DEL, and what the exporter and the NCCL profiler plugin read to tell which pod has which
// addresses. One JSON file per attachment:
//   <stateDir>/networks/<network>/<containerID>:<ifname>.json
// ("networks/..." under fabric-cni's state directory; ':' can appear in neither a container
// ID nor an interface name, so the file name is unambiguous). The format is documented in
// libs/attachment_record/README.md: this is its one writer (render_record, for fabric-cni)
// and its one reader (parse_record, read_records), so that a change to the format is a
// change here, seen by every program that reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "libs/attachment_record/attachment_mode.h"

namespace fabric::cni {

// The format's major version, the record's "schema_version". A field added keeps it
// (readers ignore fields they do not know, and a field a reader expects may be absent in
// records written before it existed); a field that changes meaning or disappears bumps it,
// and a reader refuses a version it does not know rather than misreading the record.
inline constexpr int kAttachmentRecordVersion = 1;

// Bounds for reading records from a directory another program writes: the largest file
// (fabric-cni's network configuration is at most 1 MiB, which JSON escaping can at worst
// grow sixfold) and the most files read in one network's folder.
inline constexpr std::size_t kMaxAttachmentRecordBytes = 8 << 20;
inline constexpr std::size_t kMaxAttachmentRecordsPerNetwork = 100000;

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

// The record as fabric-cni writes it, with the current schema_version.
std::string render_record(const AttachmentRecord& record);

// A record's text, read as untrusted: JSON nested at most json::kMaxDepth levels, every
// field type-checked, a schema_version other than kAttachmentRecordVersion (or none)
// refused as kIncompatibleVersion naming both versions. `what` names the record in errors.
Result<AttachmentRecord> parse_record(std::string_view text, std::string_view what);

// Where the records of `network` live under fabric-cni's state directory, and one record's
// file there.
std::string attachment_records_dir(const std::string& state_dir, const std::string& network);
std::string attachment_record_path(const std::string& state_dir, const std::string& network,
                                   const std::string& container_id, const std::string& ifname);

struct AttachmentRecords {
  std::vector<AttachmentRecord> records;
  std::vector<std::string> skipped; // files that could not be used, each with why
};

// Every record of `network` (none when its folder does not exist), in file-name order, at
// most kMaxAttachmentRecordsPerNetwork. A file that is too large, not a regular file or does
// not parse is skipped with why, never the whole set; a record removed by a concurrent DEL
// and a writer's temporary file are passed over silently.
Result<AttachmentRecords> read_records(const std::string& state_dir, const std::string& network);

} // namespace fabric::cni
