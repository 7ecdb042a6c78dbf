#include "libs/attachment_record/attachment_record.h"

#include <cerrno>

#include "common/atomic_file.h"
#include "common/json.h"
#include "common/sysfs.h"

namespace fabric::cni {
namespace {

constexpr std::string_view kAttachmentRecordSuffix = ".json";

} // namespace

std::string render_record(const AttachmentRecord& r) {
  json::Writer w(/*pretty=*/true);
  w.begin_object();
  w.field("schema_version", kAttachmentRecordVersion);
  w.field("network", r.network);
  w.field("container_id", r.container_id);
  w.field("ifname", r.ifname);
  w.field("netns", r.netns);
  w.key("pod").begin_object();
  w.field("namespace", r.pod_namespace);
  w.field("name", r.pod_name);
  w.field("uid", r.pod_uid);
  w.end_object();
  w.field("mode", r.mode == Mode::kExclusive ? "exclusive" : "shared");
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
  if (!version->has_value()) {
    return Error(ErrorCode::kIncompatibleVersion, std::string(what),
                 "attachment record without schema_version (this reader knows " +
                     std::to_string(kAttachmentRecordVersion) + ")");
  }
  if (**version != kAttachmentRecordVersion) {
    return Error(ErrorCode::kIncompatibleVersion, std::string(what),
                 "attachment record schema_version " + std::to_string(**version) +
                     " is not the supported " + std::to_string(kAttachmentRecordVersion));
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

std::string attachment_records_dir(const std::string& state_dir, const std::string& network) {
  return state_dir + "/networks/" + network;
}

std::string attachment_record_path(const std::string& state_dir, const std::string& network,
                                   const std::string& container_id, const std::string& ifname) {
  return attachment_records_dir(state_dir, network) + "/" + container_id + ":" + ifname +
         std::string(kAttachmentRecordSuffix);
}

Result<AttachmentRecords> read_records(const std::string& state_dir, const std::string& network) {
  const std::string dir = attachment_records_dir(state_dir, network);
  // SysfsReader::list is a plain sorted directory listing; a missing directory is empty.
  FABRIC_ASSIGN_OR_RETURN(auto names, SysfsReader("/").list(dir.substr(1)));
  AttachmentRecords out;
  std::size_t counted = 0;
  for (const auto& name : names) {
    // Anything else is a concurrent writer's temporary file (atomic_file.h).
    if (!name.ends_with(kAttachmentRecordSuffix)) continue;
    if (counted++ == kMaxAttachmentRecordsPerNetwork) {
      out.skipped.push_back(dir + ": more than " + std::to_string(kMaxAttachmentRecordsPerNetwork) +
                            " records; the rest are not read");
      break;
    }
    const std::string path = dir + "/" + name;
    auto text = read_bounded_file(path, kMaxAttachmentRecordBytes);
    if (!text.ok()) {
      if (text.error().sys_errno() == ENOENT) continue; // removed by a concurrent DEL
      out.skipped.push_back(text.error().message());
      continue;
    }
    auto record = parse_record(*text, path);
    if (!record.ok()) {
      out.skipped.push_back(record.error().message());
      continue;
    }
    out.records.push_back(std::move(*record));
  }
  return out;
}

} // namespace fabric::cni
