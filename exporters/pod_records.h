// Which pods have which addresses, for per-pod accounting. Two sources:
//
// - fabric-cni's attachment records (libs/attachment_record, whose README documents
//   them): <state_dir>/networks/<network>/<container>:<ifname>.json, with the pod's
//   namespace, name and its primary (cluster network, eth0) addresses, which fabric-cni
//   read in the pod at ADD (`primary.ips`; not `ips`, the RoCE interface's, whose traffic
//   never crosses the node's netfilter);
// - optionally a directory of pod records for pods fabric-cni did not attach (their main
//   network, another CNI's): one <anything>.json per pod,
//     {"schema_version": 1, "pod": {"namespace": "ns", "name": "p"}, "ips": ["10.1.2.3"]}
//   (the "pod" and "ips" fields of the attachment record; a prefix length is ignored).
//
// Files are read as untrusted input: at most 64 KiB each, 100,000 entries per directory;
// one that does not parse is skipped (and reported), never the whole set.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "exporters/cidr.h"

namespace fabric::exporters {

struct PodAddresses {
  std::string pod_namespace;
  std::string pod_name;
  std::vector<Cidr> addresses; // hosts (/32, /128), sorted, unique
  bool operator==(const PodAddresses&) const = default;
};

struct PodRecords {
  std::vector<PodAddresses> pods;   // sorted by namespace, name
  std::vector<std::string> skipped; // files that could not be used, with why
};

// Pods from both sources, merged by namespace and name. `pod_records_dir` empty: none.
// Records without a pod name (attachments outside Kubernetes) are keyed by their netns
// path's base name under the namespace "".
Result<PodRecords> read_pod_records(const std::string& cni_state_dir,
                                    const std::string& pod_records_dir);

// One pod record file's content (the second source's format).
Result<PodAddresses> parse_pod_record(std::string_view text, std::string_view what);

} // namespace fabric::exporters
