#include "exporters/pod_records.h"

#include <algorithm>
#include <map>

#include "common/atomic_file.h"
#include "common/json.h"
#include "common/sysfs.h"
#include "libs/attachment_record/attachment_record.h"

namespace fabric::exporters {
namespace {

constexpr std::size_t kMaxRecordBytes = 64 * 1024;
constexpr std::size_t kMaxEntries = 100000;

using PodKey = std::pair<std::string, std::string>;

// A record: a regular file (a FIFO is refused without blocking on it) of at most
// kMaxRecordBytes.
Result<std::string> read_small(const std::string& path) {
  return read_bounded_file(path, kMaxRecordBytes);
}

// The .json names in `dir` (relative to "/"), bounded; a missing directory is empty.
Result<std::vector<std::string>> json_files(const std::string& dir) {
  FABRIC_ASSIGN_OR_RETURN(auto names, SysfsReader("/").list(dir.substr(1)));
  std::vector<std::string> out;
  for (auto& name : names) {
    if (name.ends_with(".json") && name.front() != '.') out.push_back(dir + "/" + name);
    if (out.size() >= kMaxEntries) break;
  }
  return out;
}

void add(std::map<PodKey, std::vector<Cidr>>& pods, PodKey key, const std::vector<Cidr>& ips) {
  auto& addresses = pods[std::move(key)];
  addresses.insert(addresses.end(), ips.begin(), ips.end());
}

std::string base_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

Result<PodAddresses> parse_pod_record(std::string_view text, std::string_view what) {
  FABRIC_ASSIGN_OR_RETURN(auto doc, json::parse(text, what));
  if (!doc.IsObject()) return Error(ErrorCode::kDecode, std::string(what), "not a JSON object");
  auto context = [&](auto&& result) { return std::move(result).context(std::string(what)); };
  FABRIC_ASSIGN_OR_RETURN(auto version, context(json::get_optional_int(doc, "", "schema_version")));
  if (version.value_or(0) != 1) {
    return Error(ErrorCode::kIncompatibleVersion, std::string(what),
                 "pod record schema_version must be 1");
  }
  PodAddresses out;
  FABRIC_ASSIGN_OR_RETURN(const rapidjson::Value* pod, context(json::get_object(doc, "", "pod")));
  FABRIC_ASSIGN_OR_RETURN(out.pod_namespace, context(json::get_string(*pod, "pod", "namespace")));
  FABRIC_ASSIGN_OR_RETURN(out.pod_name, context(json::get_string(*pod, "pod", "name")));
  if (!doc.HasMember("ips") || !doc["ips"].IsArray())
    return Error(ErrorCode::kDecode, std::string(what), "ips: must be a list of addresses");
  for (const auto& ip : doc["ips"].GetArray()) {
    if (!ip.IsString()) return Error(ErrorCode::kDecode, std::string(what), "ips: not strings");
    auto host = parse_host(ip.GetString());
    if (!host.ok()) return std::move(host).error().with_context(std::string(what));
    out.addresses.push_back(*host);
  }
  return out;
}

Result<PodRecords> read_pod_records(const std::string& cni_state_dir,
                                    const std::string& pod_records_dir) {
  std::map<PodKey, std::vector<Cidr>> pods;
  PodRecords out;
  if (!cni_state_dir.empty()) {
    const std::string networks = cni_state_dir + "/networks";
    FABRIC_ASSIGN_OR_RETURN(auto network_names, SysfsReader("/").list(networks.substr(1)));
    for (const auto& network : network_names) {
      FABRIC_ASSIGN_OR_RETURN(auto files, json_files(networks + "/" + network));
      for (const auto& path : files) {
        auto text = read_small(path);
        if (!text.ok()) {
          // A record removed by a concurrent DEL is not worth a word.
          if (text.error().sys_errno() != ENOENT) out.skipped.push_back(text.error().message());
          continue;
        }
        auto record = cni::parse_record(*text, path);
        if (!record.ok()) {
          out.skipped.push_back(record.error().message());
          continue;
        }
        std::vector<Cidr> ips;
        bool bad = false;
        // The primary (cluster network) addresses: the RoCE interface's own never cross the
        // node's netfilter.
        for (const auto& ip : record->primary_ips) {
          auto host = parse_host(ip);
          if (!host.ok()) {
            out.skipped.push_back(path + ": " + host.error().message());
            bad = true;
            break;
          }
          ips.push_back(*host);
        }
        if (bad) continue;
        PodKey key{record->pod_namespace, record->pod_name};
        if (key.second.empty()) key.second = base_name(record->netns);
        add(pods, std::move(key), ips);
      }
    }
  }
  if (!pod_records_dir.empty()) {
    FABRIC_ASSIGN_OR_RETURN(auto files, json_files(pod_records_dir));
    for (const auto& path : files) {
      auto text = read_small(path);
      if (!text.ok()) {
        if (text.error().sys_errno() != ENOENT) out.skipped.push_back(text.error().message());
        continue;
      }
      auto pod = parse_pod_record(*text, path);
      if (!pod.ok()) {
        out.skipped.push_back(pod.error().message());
        continue;
      }
      add(pods, {pod->pod_namespace, pod->pod_name}, pod->addresses);
    }
  }
  for (auto& [key, addresses] : pods) {
    std::sort(addresses.begin(), addresses.end());
    addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
    if (addresses.empty()) continue;
    out.pods.push_back({key.first, key.second, std::move(addresses)});
  }
  return out;
}

} // namespace fabric::exporters
