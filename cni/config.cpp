#include "cni/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "cni/names.h"
#include "cni/result.h"
#include "cni/version.h"
#include "common/hw_address.h"
#include "common/json.h"
#include "common/log.h"

namespace fabric::cni {
namespace {

using rapidjson::Value;

Error invalid(std::string field, std::string detail) {
  return Error(ErrorCode::kInvalidConfig, std::move(field), std::move(detail));
}

// names.h reports interface names as environment errors (they usually come from
// CNI_IFNAME); a name from the configuration is a configuration error.
Result<void> as_config_error(Result<void> r) {
  if (r.ok()) return r;
  const Error& e = r.error();
  return invalid(e.operation(), e.detail());
}

template <typename Enum, std::size_t N>
Result<Enum> parse_enum(const Value& root, const char* field,
                        const std::pair<std::string_view, Enum> (&names)[N], Enum fallback) {
  FABRIC_ASSIGN_OR_RETURN(auto text, json::get_optional_string(root, "", field));
  if (!text) return fallback;
  std::string expected;
  for (const auto& [name, value] : names) {
    if (name == *text) return value;
    expected += expected.empty() ? "" : ", ";
    expected += "\"" + std::string(name) + "\"";
  }
  return invalid(field, "unknown value \"" + *text + "\" (expected " + expected + ")");
}

constexpr std::pair<std::string_view, Mode> kModes[] = {{"shared", Mode::kShared},
                                                        {"exclusive", Mode::kExclusive}};
constexpr std::pair<std::string_view, MacvlanMode> kMacvlanModes[] = {
    {"bridge", MacvlanMode::kBridge},
    {"private", MacvlanMode::kPrivate},
    {"vepa", MacvlanMode::kVepa},
    {"passthru", MacvlanMode::kPassthru}};
constexpr std::pair<std::string_view, GidCheck> kGidChecks[] = {
    {"require", GidCheck::kRequire}, {"warn", GidCheck::kWarn}, {"off", GidCheck::kOff}};

template <typename Enum, std::size_t N>
std::string_view enum_name(Enum value, const std::pair<std::string_view, Enum> (&names)[N]) {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  return "unknown";
}

Result<std::string> optional_string_field(const Value& obj, std::string_view path,
                                          std::string_view name) {
  FABRIC_ASSIGN_OR_RETURN(auto v, json::get_optional_string(obj, path, name));
  return v.value_or("");
}

// The same parser resolve_parent() uses, so that what passes here is found there.
Result<void> check_pci(const std::string& value, const std::string& field) {
  auto pci = normalize_pci_address(value);
  if (pci.ok()) return Ok();
  return invalid(field, "'" + value + "' is not a PCI address: " + pci.error().detail());
}

// RDMA device names (mlx5_0, rxe0, irdma1): the kernel's IB_DEVICE_NAME_MAX is 64 with the
// NUL; the name becomes a sysfs path component, so '/' and ".." are out.
Result<void> check_rdma_device(const std::string& value) {
  if (value.empty() || value.size() > 63 || value == "." || value == "..") {
    return invalid("rdmaDevice", "'" + value + "' is not an RDMA device name");
  }
  for (char c : value) {
    if (c == '/' || !std::isgraph(static_cast<unsigned char>(c))) {
      return invalid("rdmaDevice", "'" + value + "' is not an RDMA device name");
    }
  }
  return Ok();
}

Result<std::vector<std::string>> ip_list(const Value& obj, std::string_view path,
                                         std::string_view name) {
  std::vector<std::string> out;
  const Value* v = json::find_non_null(obj, name);
  if (v == nullptr) return out;
  std::string field = json::field_path(path, name);
  if (!v->IsArray()) return invalid(field, "must be an array of IP addresses");
  for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
    std::string item_field = field + "[" + std::to_string(i) + "]";
    const Value& item = (*v)[i];
    if (!item.IsString()) return invalid(item_field, "must be a string");
    std::string ip(item.GetString(), item.GetStringLength());
    if (!is_ip_address(ip) && !is_cidr(ip)) {
      return invalid(item_field, "'" + ip + "' is not an IP address or CIDR");
    }
    out.push_back(std::move(ip));
  }
  return out;
}

Result<std::vector<ValidAttachment>> parse_attachments(const Value& root) {
  const char* key = kValidAttachmentsKey;
  const Value* list = json::find_non_null(root, key);
  if (list == nullptr) {
    key = kLegacyAttachmentsKey;
    list = json::find_non_null(root, key);
  }
  if (list == nullptr) {
    return invalid(kValidAttachmentsKey,
                   "is required for GC (without it every attachment would look stale)");
  }
  if (!list->IsArray()) return invalid(key, "must be an array of {containerID, ifname}");
  std::vector<ValidAttachment> out;
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    std::string path = std::string(key) + "[" + std::to_string(i) + "]";
    const Value& item = (*list)[i];
    if (!item.IsObject()) return invalid(path, "must be an object {containerID, ifname}");
    ValidAttachment a;
    FABRIC_ASSIGN_OR_RETURN(a.container_id, json::get_string(item, path, "containerID"));
    FABRIC_ASSIGN_OR_RETURN(a.ifname, json::get_string(item, path, "ifname"));
    FABRIC_TRY(as_config_error(
        validate_container_id(a.container_id, json::field_path(path, "containerID"))));
    FABRIC_TRY(
        as_config_error(validate_interface_name(a.ifname, json::field_path(path, "ifname"))));
    out.push_back(std::move(a));
  }
  return out;
}

Result<void> parse_runtime_config(const Value& root, NetConf& conf) {
  const Value* rc = json::find_non_null(root, "runtimeConfig");
  if (rc == nullptr) return Ok();
  if (!rc->IsObject()) return invalid("runtimeConfig", "must be an object");
  const char* path = "runtimeConfig";
  FABRIC_ASSIGN_OR_RETURN(auto mac, json::get_optional_string(*rc, path, "mac"));
  if (mac && !mac->empty()) {
    FABRIC_ASSIGN_OR_RETURN(conf.runtime_mac, normalize_mac(*mac, "runtimeConfig.mac"));
  }
  FABRIC_ASSIGN_OR_RETURN(auto device_id, json::get_optional_string(*rc, path, "deviceID"));
  if (device_id && !device_id->empty()) {
    FABRIC_TRY(check_pci(*device_id, "runtimeConfig.deviceID"));
    conf.runtime_device_id = *device_id;
  }
  FABRIC_ASSIGN_OR_RETURN(auto info_file,
                          json::get_optional_string(*rc, path, "CNIDeviceInfoFile"));
  if (info_file && !info_file->empty()) {
    FABRIC_TRY(check_absolute_path(*info_file, "runtimeConfig.CNIDeviceInfoFile"));
    conf.device_info_file = *info_file;
  }
  FABRIC_ASSIGN_OR_RETURN(conf.runtime_ips, ip_list(*rc, path, "ips"));
  return Ok();
}

Result<void> parse_args(const Value& root, NetConf& conf) {
  const Value* args = json::find_non_null(root, "args");
  if (args == nullptr) return Ok();
  if (!args->IsObject()) return invalid("args", "must be an object");
  const Value* cni = json::find_non_null(*args, "cni");
  if (cni == nullptr) return Ok();
  if (!cni->IsObject()) return invalid("args.cni", "must be an object");
  FABRIC_ASSIGN_OR_RETURN(conf.args_ips, ip_list(*cni, "args.cni", "ips"));
  return Ok();
}

Result<void> parse_ipam(const Value& root, NetConf& conf) {
  const Value* ipam = json::find_non_null(root, "ipam");
  if (ipam == nullptr) return Ok();
  if (!ipam->IsObject()) return invalid("ipam", "must be an object");
  FABRIC_ASSIGN_OR_RETURN(auto type, json::get_optional_string(*ipam, "ipam", "type"));
  if (!type || type->empty()) return Ok();
  // The type is a file name looked up on CNI_PATH; a path in it would escape CNI_PATH.
  if (!is_plugin_name(*type)) {
    return invalid("ipam.type", "'" + *type + "' must be a plugin file name, not a path");
  }
  conf.ipam_type = *type;
  return Ok();
}

Result<void> parse_plugin_keys(const Value& root, NetConf& conf, Command command) {
  FABRIC_ASSIGN_OR_RETURN(conf.mode, parse_enum(root, "mode", kModes, Mode::kShared));

  FABRIC_ASSIGN_OR_RETURN(conf.master, optional_string_field(root, "", "master"));
  if (!conf.master.empty()) {
    FABRIC_TRY(as_config_error(validate_interface_name(conf.master, "master")));
  }
  FABRIC_ASSIGN_OR_RETURN(conf.rdma_device, optional_string_field(root, "", "rdmaDevice"));
  if (!conf.rdma_device.empty()) FABRIC_TRY(check_rdma_device(conf.rdma_device));
  FABRIC_ASSIGN_OR_RETURN(conf.device_id, optional_string_field(root, "", "deviceID"));
  if (!conf.device_id.empty()) FABRIC_TRY(check_pci(conf.device_id, "deviceID"));
  FABRIC_ASSIGN_OR_RETURN(conf.pci_bus_id, optional_string_field(root, "", "pciBusID"));
  if (!conf.pci_bus_id.empty()) FABRIC_TRY(check_pci(conf.pci_bus_id, "pciBusID"));

  FABRIC_ASSIGN_OR_RETURN(auto mtu, json::get_optional_int(root, "", "mtu"));
  if (mtu) {
    if (*mtu < kMinMtu || *mtu > kMaxMtu) {
      return invalid("mtu", "must be between " + std::to_string(kMinMtu) + " and " +
                                std::to_string(kMaxMtu) + " (got " + std::to_string(*mtu) + ")");
    }
    conf.mtu = static_cast<int>(*mtu);
  }

  FABRIC_ASSIGN_OR_RETURN(auto mac, json::get_optional_string(root, "", "mac"));
  if (mac && !mac->empty()) {
    FABRIC_ASSIGN_OR_RETURN(conf.mac, normalize_mac(*mac, "mac"));
  }

  FABRIC_ASSIGN_OR_RETURN(conf.macvlan_mode,
                          parse_enum(root, "macvlanMode", kMacvlanModes, MacvlanMode::kBridge));
  FABRIC_ASSIGN_OR_RETURN(conf.gid_check,
                          parse_enum(root, "gidCheck", kGidChecks, GidCheck::kRequire));

  FABRIC_ASSIGN_OR_RETURN(auto timeout, json::get_optional_int(root, "", "gidTimeoutMs"));
  if (timeout) {
    if (*timeout < 0 || *timeout > kMaxGidTimeoutMs) {
      return invalid("gidTimeoutMs", "must be between 0 and " + std::to_string(kMaxGidTimeoutMs) +
                                         " (got " + std::to_string(*timeout) + ")");
    }
    conf.gid_timeout = std::chrono::milliseconds(*timeout);
  }

  FABRIC_ASSIGN_OR_RETURN(auto state_dir, json::get_optional_string(root, "", "stateDir"));
  if (state_dir) {
    FABRIC_TRY(check_absolute_path(*state_dir, "stateDir"));
    conf.state_dir = *state_dir;
  }
  FABRIC_ASSIGN_OR_RETURN(auto primary, json::get_optional_string(root, "", "primaryInterface"));
  if (primary) {
    if (!primary->empty()) FABRIC_TRY(validate_interface_name(*primary, "primaryInterface"));
    conf.primary_interface = *primary;
  }
  FABRIC_ASSIGN_OR_RETURN(conf.log_file, json::get_optional_string(root, "", "logFile"));
  if (conf.log_file) FABRIC_TRY(check_absolute_path(*conf.log_file, "logFile"));
  FABRIC_ASSIGN_OR_RETURN(auto level, json::get_optional_string(root, "", "logLevel"));
  if (level) {
    if (!log::parse_level(*level).ok()) {
      return invalid("logLevel",
                     "unknown level \"" + *level + "\" (expected one of " + log::kLevelNames + ")");
    }
    conf.log_level = *level;
  }

  FABRIC_TRY(parse_ipam(root, conf));
  FABRIC_TRY(parse_runtime_config(root, conf));
  FABRIC_TRY(parse_args(root, conf));

  if (const Value* prev = json::find_non_null(root, "prevResult"); prev != nullptr) {
    if (!prev->IsObject()) return invalid("prevResult", "must be an object");
    conf.prev_result = json::to_string(*prev);
  } else if (command == Command::kCheck) {
    return invalid("prevResult", "is required for CHECK (the runtime sends the ADD result)");
  }
  if (command == Command::kGc) {
    FABRIC_ASSIGN_OR_RETURN(conf.valid_attachments, parse_attachments(root));
  }

  if (conf.mode == Mode::kExclusive) {
    const char* why = "only applies to mode \"shared\"; mode \"exclusive\" moves the whole "
                      "device into the pod as it is";
    if (json::find_non_null(root, "macvlanMode") != nullptr) return invalid("macvlanMode", why);
    if (conf.mac) return invalid("mac", why);
    if (conf.runtime_mac) return invalid("runtimeConfig.mac", why);
  }
  if ((command == Command::kAdd || command == Command::kCheck) && conf.master.empty() &&
      conf.rdma_device.empty() && !effective_device_id(conf)) {
    return invalid("master", "no parent device: set master, rdmaDevice, deviceID or pciBusID "
                             "(or let a device plugin pass runtimeConfig.deviceID)");
  }
  return Ok();
}

} // namespace

std::string_view mode_name(Mode mode) {
  return enum_name(mode, kModes);
}
std::string_view macvlan_mode_name(MacvlanMode mode) {
  return enum_name(mode, kMacvlanModes);
}
std::string_view gid_check_name(GidCheck check) {
  return enum_name(check, kGidChecks);
}

Result<std::string> normalize_mac(std::string_view mac, std::string_view field) {
  auto parsed = parse_mac(mac);
  if (!parsed.ok()) {
    return invalid(std::string(field),
                   "'" + std::string(mac) + "' is not a MAC address (aa:bb:cc:dd:ee:ff)");
  }
  if (!is_unicast_mac(*parsed)) {
    return invalid(std::string(field), "'" + std::string(mac) +
                                           "' is a multicast or all-zero address; an interface "
                                           "needs a unicast one");
  }
  return format_mac(*parsed);
}

Result<void> check_absolute_path(std::string_view value, std::string_view field) {
  if (value.empty() || value.front() != '/') {
    return invalid(std::string(field), "'" + std::string(value) + "' must be an absolute path");
  }
  if (value.find('\0') != std::string_view::npos) {
    return invalid(std::string(field), "contains a NUL byte");
  }
  return Ok();
}

bool is_plugin_name(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c != '/' && std::isgraph(static_cast<unsigned char>(c)) != 0;
  });
}

Result<NetConf> parse_netconf(std::string_view stdin_text, Command command) {
  NetConf conf;
  if (command == Command::kVersion) {
    conf.cni_version = std::string(kLatestVersion);
    return conf;
  }
  if (stdin_text.size() > kMaxNetConfBytes) {
    // Not parsed, not copied into the state file: a configuration is a few kilobytes.
    return Error(ErrorCode::kInvalidConfig, "network configuration",
                 "more than " + std::to_string(kMaxNetConfBytes) + " bytes on stdin")
        .with_hint("a CNI network configuration is a few kilobytes; check what the runtime "
                   "passes");
  }
  conf.raw = std::string(stdin_text);

  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document doc,
                          json::parse(stdin_text, "network configuration"));
  if (!doc.IsObject()) {
    return Error(ErrorCode::kDecode, "network configuration", "must be a JSON object");
  }

  FABRIC_ASSIGN_OR_RETURN(auto name, json::get_optional_string(doc, "", "name"));
  if (!name || name->empty()) return invalid("name", "is required (the network's name)");
  FABRIC_TRY(validate_network_name(*name, "name"));
  conf.name = *name;

  FABRIC_ASSIGN_OR_RETURN(auto version, json::get_optional_string(doc, "", "cniVersion"));
  if (!version || version->empty()) {
    std::string supported;
    for (const auto& v : supported_versions())
      supported += (supported.empty() ? "" : ", ") + v;
    return Error(ErrorCode::kIncompatibleVersion, "cniVersion",
                 "is missing, which the CNI spec reads as " + std::string(kImpliedVersion) +
                     "; fabric-cni supports " + supported)
        .with_hint("add \"cniVersion\": \"" + std::string(kLatestVersion) +
                   "\" to the network configuration");
  }
  FABRIC_TRY(check_supported(*version));
  FABRIC_TRY(check_command_allowed(command, *version));
  conf.cni_version = *version;

  FABRIC_ASSIGN_OR_RETURN(conf.type, json::get_string(doc, "", "type"));
  if (conf.type != kPluginType) {
    return invalid("type",
                   "is \"" + conf.type + "\"; this plugin is \"" + std::string(kPluginType) + "\"");
  }

  FABRIC_TRY(parse_plugin_keys(doc, conf, command));
  return conf;
}

Result<std::optional<std::string>> effective_mac(const NetConf& conf, const CniEnv& env) {
  std::optional<std::string> mac = conf.runtime_mac;
  if (!mac) {
    if (auto it = env.args.find("MAC"); it != env.args.end() && !it->second.empty()) {
      auto normalized = normalize_mac(it->second, "CNI_ARGS MAC");
      if (!normalized.ok()) {
        const Error& e = normalized.error();
        return Error(ErrorCode::kInvalidEnvironment, e.operation(), e.detail());
      }
      mac = *normalized;
    }
  }
  if (!mac) mac = conf.mac;
  if (mac && conf.mode == Mode::kExclusive) {
    return invalid("mode", "\"exclusive\" cannot set the pod's MAC address (" + *mac +
                               " was requested); the device keeps its own");
  }
  return mac;
}

std::optional<std::string> effective_device_id(const NetConf& conf) {
  if (conf.runtime_device_id) return conf.runtime_device_id;
  if (!conf.device_id.empty()) return conf.device_id;
  if (!conf.pci_bus_id.empty()) return conf.pci_bus_id;
  return std::nullopt;
}

} // namespace fabric::cni
