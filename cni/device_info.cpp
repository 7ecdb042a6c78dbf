#include "cni/device_info.h"

#include <cerrno>

#include "common/atomic_file.h"
#include "common/json.h"

namespace fabric::cni {
namespace {

void set_string(rapidjson::Value& object, const char* name, const std::string& value,
                rapidjson::Document::AllocatorType& alloc) {
  rapidjson::Value v(value.c_str(), static_cast<rapidjson::SizeType>(value.size()), alloc);
  if (object.HasMember(name)) {
    object[name] = v;
  } else {
    object.AddMember(rapidjson::Value(name, alloc), v, alloc);
  }
}

} // namespace

Result<std::string> merge_device_info(std::string_view existing, const DeviceInfo& info) {
  rapidjson::Document doc;
  if (existing.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    doc.SetObject();
  } else {
    FABRIC_ASSIGN_OR_RETURN(doc, json::parse(existing, "existing device-info file"));
    if (!doc.IsObject()) {
      return Error(ErrorCode::kInvalidConfig, "device-info file",
                   "holds something other than a JSON object; not overwriting it");
    }
  }
  auto& alloc = doc.GetAllocator();
  // A device plugin's type (e.g. "pci" from the SR-IOV plugin) is kept; ours is "pci" too.
  if (!doc.HasMember("type")) set_string(doc, "type", "pci", alloc);
  set_string(doc, "version", kDeviceInfoVersion, alloc);
  if (!doc.HasMember("pci") || !doc["pci"].IsObject()) {
    if (doc.HasMember("pci")) doc.RemoveMember("pci");
    doc.AddMember("pci", rapidjson::Value(rapidjson::kObjectType), alloc);
  }
  auto& pci = doc["pci"];
  if (!info.pci_address.empty()) set_string(pci, "pci-address", info.pci_address, alloc);
  if (!info.rdma_device.empty()) set_string(pci, "rdma-device", info.rdma_device, alloc);
  return json::to_string(doc, /*pretty=*/true) + "\n";
}

Result<DeviceInfoWrite> write_device_info(const std::string& path, const DeviceInfo& info) {
  DeviceInfoWrite outcome;
  std::string existing;
  auto read = read_file(path);
  if (read.ok()) {
    existing = std::move(*read);
  } else if (read.error().sys_errno() == ENOENT) {
    outcome.created = true;
  } else {
    return std::move(read).error().with_context("reading device-info file");
  }
  FABRIC_ASSIGN_OR_RETURN(std::string text,
                          std::move(merge_device_info(existing, info)).context(path));
  auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    FABRIC_TRY(make_directories(path.substr(0, slash), 0755).context("device-info directory"));
  }
  FABRIC_TRY(write_file_atomic(path, text, 0644).context("writing device-info file"));
  return outcome;
}

} // namespace fabric::cni
