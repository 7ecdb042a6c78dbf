#include "cni/state.h"

#include <cerrno>
#include <ctime>
#include <unistd.h>

#include "cni/config.h"
#include "common/atomic_file.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sysfs.h"

namespace fabric::cni {
namespace {

constexpr const char* kSuffix = ".json";

} // namespace

std::string now_rfc3339() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string render_record(const AttachmentRecord& r) {
  json::Writer w(/*pretty=*/true);
  w.begin_object();
  w.field("schema_version", kStateSchemaVersion);
  w.field("network", r.network);
  w.field("container_id", r.container_id);
  w.field("ifname", r.ifname);
  w.field("netns", r.netns);
  w.key("pod").begin_object();
  w.field("namespace", r.pod_namespace);
  w.field("name", r.pod_name);
  w.field("uid", r.pod_uid);
  w.end_object();
  w.field("mode", mode_name(r.mode));
  w.field("cni_version", r.cni_version);
  w.key("parent").begin_object();
  w.field("netdev", r.parent_netdev);
  w.field("rdma_device", r.rdma_device);
  w.field("rdma_port", r.rdma_port);
  w.field("pci_address", r.pci_address);
  if (r.mode == Mode::kExclusive) {
    w.field("mtu", r.parent_mtu);
    w.field("alias", r.parent_alias);
  }
  w.end_object();
  w.field("mac", r.mac);
  w.field("mtu", r.mtu);
  w.key("ips").begin_array();
  for (const auto& ip : r.ips)
    w.value(ip);
  w.end_array();
  w.key("primary").begin_object();
  w.field("ifname", r.primary_ifname);
  w.key("ips").begin_array();
  for (const auto& ip : r.primary_ips)
    w.value(ip);
  w.end_array();
  w.end_object();
  w.field("gid_index", r.gid_index);
  w.field("device_info_file", r.device_info_file);
  w.field("device_info_created", r.device_info_created);
  w.field("rdma_device_moved", r.rdma_device_moved);
  w.field("netconf", r.netconf);
  w.field("created_at", r.created_at);
  w.end_object();
  return w.str();
}

Result<AttachmentRecord> parse_record(std::string_view text, std::string_view what) {
  FABRIC_ASSIGN_OR_RETURN(auto doc, json::parse(text, what));
  if (!doc.IsObject()) return Error(ErrorCode::kDecode, std::string(what), "not a JSON object");
  auto version = json::get_optional_int(doc, "", "schema_version");
  if (!version.ok()) return std::move(version).error().with_context(std::string(what));
  if (version->value_or(0) != kStateSchemaVersion) {
    return Error(ErrorCode::kIncompatibleVersion, std::string(what),
                 "state schema_version " + std::to_string(version->value_or(0)) +
                     " is not the supported " + std::to_string(kStateSchemaVersion));
  }
  AttachmentRecord r;
  auto ctx = [&](auto&& result) { return std::move(result).context(std::string(what)); };
  FABRIC_ASSIGN_OR_RETURN(r.network, ctx(json::get_string(doc, "", "network")));
  FABRIC_ASSIGN_OR_RETURN(r.container_id, ctx(json::get_string(doc, "", "container_id")));
  FABRIC_ASSIGN_OR_RETURN(r.ifname, ctx(json::get_string(doc, "", "ifname")));
  FABRIC_ASSIGN_OR_RETURN(r.netns, ctx(json::get_string(doc, "", "netns")));
  FABRIC_ASSIGN_OR_RETURN(const rapidjson::Value* pod, ctx(json::get_object(doc, "", "pod")));
  FABRIC_ASSIGN_OR_RETURN(r.pod_namespace, ctx(json::get_string(*pod, "pod", "namespace")));
  FABRIC_ASSIGN_OR_RETURN(r.pod_name, ctx(json::get_string(*pod, "pod", "name")));
  FABRIC_ASSIGN_OR_RETURN(r.pod_uid, ctx(json::get_string(*pod, "pod", "uid")));
  FABRIC_ASSIGN_OR_RETURN(std::string mode, ctx(json::get_string(doc, "", "mode")));
  if (mode == "exclusive") {
    r.mode = Mode::kExclusive;
  } else if (mode != "shared") {
    return Error(ErrorCode::kDecode, std::string(what), "mode: unknown value '" + mode + "'");
  }
  FABRIC_ASSIGN_OR_RETURN(r.cni_version, ctx(json::get_string(doc, "", "cni_version")));
  FABRIC_ASSIGN_OR_RETURN(const rapidjson::Value* parent, ctx(json::get_object(doc, "", "parent")));
  FABRIC_ASSIGN_OR_RETURN(r.parent_netdev, ctx(json::get_string(*parent, "parent", "netdev")));
  FABRIC_ASSIGN_OR_RETURN(r.rdma_device, ctx(json::get_string(*parent, "parent", "rdma_device")));
  FABRIC_ASSIGN_OR_RETURN(auto port, ctx(json::get_optional_int(*parent, "parent", "rdma_port")));
  r.rdma_port = static_cast<uint32_t>(port.value_or(1));
  FABRIC_ASSIGN_OR_RETURN(r.pci_address, ctx(json::get_string(*parent, "parent", "pci_address")));
  FABRIC_ASSIGN_OR_RETURN(auto parent_mtu, ctx(json::get_optional_int(*parent, "parent", "mtu")));
  if (parent_mtu && (*parent_mtu < 0 || *parent_mtu > 65535)) {
    return Error(ErrorCode::kDecode, std::string(what),
                 "parent.mtu: " + std::to_string(*parent_mtu) + " is not an MTU");
  }
  r.parent_mtu = static_cast<int>(parent_mtu.value_or(0));
  FABRIC_ASSIGN_OR_RETURN(auto parent_alias,
                          ctx(json::get_optional_string(*parent, "parent", "alias")));
  r.parent_alias = parent_alias.value_or("");
  FABRIC_ASSIGN_OR_RETURN(r.mac, ctx(json::get_string(doc, "", "mac")));
  FABRIC_ASSIGN_OR_RETURN(auto mtu, ctx(json::get_optional_int(doc, "", "mtu")));
  r.mtu = static_cast<int>(mtu.value_or(0));
  if (doc.HasMember("ips") && doc["ips"].IsArray()) {
    for (const auto& ip : doc["ips"].GetArray()) {
      if (!ip.IsString()) return Error(ErrorCode::kDecode, std::string(what), "ips: not strings");
      r.ips.emplace_back(ip.GetString());
    }
  }
  if (doc.HasMember("primary")) {
    FABRIC_ASSIGN_OR_RETURN(const rapidjson::Value* primary,
                            ctx(json::get_object(doc, "", "primary")));
    FABRIC_ASSIGN_OR_RETURN(r.primary_ifname, ctx(json::get_string(*primary, "primary", "ifname")));
    if (!primary->HasMember("ips") || !(*primary)["ips"].IsArray())
      return Error(ErrorCode::kDecode, std::string(what), "primary.ips: must be a list");
    for (const auto& ip : (*primary)["ips"].GetArray()) {
      if (!ip.IsString())
        return Error(ErrorCode::kDecode, std::string(what), "primary.ips: not strings");
      r.primary_ips.emplace_back(ip.GetString());
    }
  }
  FABRIC_ASSIGN_OR_RETURN(auto gid, ctx(json::get_optional_int(doc, "", "gid_index")));
  if (gid) r.gid_index = static_cast<uint32_t>(*gid);
  FABRIC_ASSIGN_OR_RETURN(auto info_file,
                          ctx(json::get_optional_string(doc, "", "device_info_file")));
  r.device_info_file = info_file.value_or("");
  FABRIC_ASSIGN_OR_RETURN(auto created,
                          ctx(json::get_optional_bool(doc, "", "device_info_created")));
  r.device_info_created = created.value_or(false);
  FABRIC_ASSIGN_OR_RETURN(auto moved, ctx(json::get_optional_bool(doc, "", "rdma_device_moved")));
  r.rdma_device_moved = moved.value_or(false);
  FABRIC_ASSIGN_OR_RETURN(r.netconf, ctx(json::get_string(doc, "", "netconf")));
  FABRIC_ASSIGN_OR_RETURN(auto at, ctx(json::get_optional_string(doc, "", "created_at")));
  r.created_at = at.value_or("");
  return r;
}

StateStore::StateStore(std::string root) : root_(std::move(root)) {}

std::string StateStore::network_dir(const std::string& network) const {
  return root_ + "/networks/" + network;
}

std::string StateStore::record_path(const std::string& network, const std::string& container_id,
                                    const std::string& ifname) const {
  return network_dir(network) + "/" + container_id + ":" + ifname + kSuffix;
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
  auto text = read_file(path);
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
  // SysfsReader::list is a plain sorted directory listing; a missing directory is empty.
  SysfsReader dir("/");
  FABRIC_ASSIGN_OR_RETURN(auto names, dir.list(network_dir(network).substr(1)));
  std::vector<AttachmentRecord> records;
  for (const auto& name : names) {
    if (!name.ends_with(kSuffix)) {
      continue; // temporary files of a concurrent writer
    }
    std::string path = network_dir(network) + "/" + name;
    auto text = read_file(path);
    if (!text.ok()) {
      if (text.error().sys_errno() == ENOENT) continue; // removed by a concurrent DEL
      spdlog::warn("skipping state file {}: {}", path, text.error().message());
      continue;
    }
    auto record = parse_record(*text, path);
    if (!record.ok()) {
      spdlog::warn("skipping state file {}: {}", path, record.error().message());
      continue;
    }
    records.push_back(std::move(*record));
  }
  return records;
}

} // namespace fabric::cni
