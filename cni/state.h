// Where fabric-cni keeps its attachment records between ADD and DEL: one file per
// attachment under <stateDir>/networks/<network>/, written atomically (write + rename),
// mode 0600 under a 0700 directory: readable by root only. The record's format, its writer
// and its reader are libs/attachment_record, which the exporter reads too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni/modes.h"
#include "common/result.h"
#include "libs/attachment_record/attachment_record.h"

namespace fabric::cni {

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
