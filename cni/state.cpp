#include "cni/state.h"

#include <cerrno>
#include <ctime>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/log.h"

namespace fabric::cni {

std::string now_rfc3339() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

StateStore::StateStore(std::string root) : root_(std::move(root)) {}

std::string StateStore::network_dir(const std::string& network) const {
  return attachment_records_dir(root_, network);
}

std::string StateStore::record_path(const std::string& network, const std::string& container_id,
                                    const std::string& ifname) const {
  return attachment_record_path(root_, network, container_id, ifname);
}

Result<void> StateStore::save(const AttachmentRecord& record) const {
  // 0700 directories: the records name pods and addresses, which is root's business.
  FABRIC_TRY(make_directories(network_dir(record.network), 0700).context("state directory"));
  return write_file_atomic(record_path(record.network, record.container_id, record.ifname),
                           render_record(record), 0600)
      .context("saving attachment state");
}

Result<std::optional<AttachmentRecord>> StateStore::load(const std::string& network,
                                                         const std::string& container_id,
                                                         const std::string& ifname) const {
  std::string path = record_path(network, container_id, ifname);
  // The same bound as list(): a record file is ours, but a damaged or planted one must not
  // make DEL read without end.
  auto text = read_bounded_file(path, kMaxAttachmentRecordBytes);
  if (!text.ok()) {
    if (text.error().sys_errno() == ENOENT) return std::optional<AttachmentRecord>{};
    return std::move(text).error().with_context("reading attachment state");
  }
  FABRIC_ASSIGN_OR_RETURN(auto record, parse_record(*text, path));
  return std::optional<AttachmentRecord>(std::move(record));
}

Result<void> StateStore::remove(const std::string& network, const std::string& container_id,
                                const std::string& ifname) const {
  std::string path = record_path(network, container_id, ifname);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Error::from_errno(errno, "unlink", path).with_context("removing attachment state");
  }
  return Ok();
}

Result<std::vector<AttachmentRecord>> StateStore::list(const std::string& network) const {
  FABRIC_ASSIGN_OR_RETURN(auto found, read_records(root_, network));
  for (const auto& why : found.skipped)
    spdlog::warn("skipping state file {}", why);
  return std::move(found.records);
}

} // namespace fabric::cni
