#include "cni/result.h"

#include <arpa/inet.h>
#include <charconv>
#include <climits>

#include "cni/version.h"
#include "common/json.h"

namespace fabric::cni {
namespace {

using rapidjson::Value;

std::string index_path(std::string_view array, std::size_t i) {
  return std::string(array) + "[" + std::to_string(i) + "]";
}

// An optional array member; nullptr when absent or null.
Result<const Value*> optional_array(const Value& obj, std::string_view path,
                                    std::string_view name) {
  const Value* v = json::find_non_null(obj, name);
  if (v != nullptr && !v->IsArray()) {
    return Error(ErrorCode::kInvalidConfig, json::field_path(path, name), "must be an array");
  }
  return v;
}

Result<std::vector<std::string>> string_array(const Value& obj, std::string_view path,
                                              std::string_view name) {
  FABRIC_ASSIGN_OR_RETURN(const Value* array, optional_array(obj, path, name));
  std::vector<std::string> out;
  if (array == nullptr) return out;
  for (rapidjson::SizeType i = 0; i < array->Size(); ++i) {
    const Value& item = (*array)[i];
    if (!item.IsString()) {
      return Error(ErrorCode::kInvalidConfig, index_path(json::field_path(path, name), i),
                   "must be a string");
    }
    out.emplace_back(item.GetString(), item.GetStringLength());
  }
  return out;
}

Result<std::optional<int>> optional_int(const Value& obj, std::string_view path,
                                        std::string_view name, int64_t min, int64_t max) {
  FABRIC_ASSIGN_OR_RETURN(auto v, json::get_optional_int(obj, path, name));
  if (!v) return std::optional<int>();
  if (*v < min || *v > max) {
    return Error(ErrorCode::kInvalidConfig, json::field_path(path, name),
                 "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                     " (got " + std::to_string(*v) + ")");
  }
  return std::optional<int>(static_cast<int>(*v));
}

Result<std::string> required_cidr(const Value& obj, std::string_view path, std::string_view name) {
  FABRIC_ASSIGN_OR_RETURN(std::string v, json::get_string(obj, path, name));
  if (!is_cidr(v)) {
    return Error(ErrorCode::kInvalidConfig, json::field_path(path, name),
                 "'" + v + "' is not an address with a prefix length (CIDR)");
  }
  return v;
}

Result<std::optional<std::string>> optional_ip(const Value& obj, std::string_view path,
                                               std::string_view name) {
  FABRIC_ASSIGN_OR_RETURN(auto v, json::get_optional_string(obj, path, name));
  // An empty gateway is how some plugins write "none".
  if (v && v->empty()) return std::optional<std::string>();
  if (v && !is_ip_address(*v)) {
    return Error(ErrorCode::kInvalidConfig, json::field_path(path, name),
                 "'" + *v + "' is not an IP address");
  }
  return v;
}

std::string optional_string_or_empty(const Result<std::optional<std::string>>& r) {
  return r.ok() && *r ? **r : std::string();
}

Result<Interface> parse_interface(const Value& v, const std::string& path) {
  if (!v.IsObject()) return Error(ErrorCode::kInvalidConfig, path, "must be an object");
  Interface iface;
  for (auto [field, target] : {std::pair<const char*, std::string*>{"name", &iface.name},
                               {"mac", &iface.mac},
                               {"sandbox", &iface.sandbox},
                               {"socketPath", &iface.socket_path},
                               {"pciID", &iface.pci_id},
                               {"rdmaDevice", &iface.rdma_device}}) {
    auto s = json::get_optional_string(v, path, field);
    if (!s.ok()) return std::move(s).error();
    *target = optional_string_or_empty(s);
  }
  FABRIC_ASSIGN_OR_RETURN(iface.mtu, optional_int(v, path, "mtu", 0, INT_MAX));
  FABRIC_ASSIGN_OR_RETURN(iface.gid_index, optional_int(v, path, "gidIndex", 0, INT_MAX));
  return iface;
}

Result<IpConfig> parse_ip(const Value& v, const std::string& path, std::size_t interface_count) {
  if (!v.IsObject()) return Error(ErrorCode::kInvalidConfig, path, "must be an object");
  IpConfig ip;
  FABRIC_ASSIGN_OR_RETURN(ip.address, required_cidr(v, path, "address"));
  FABRIC_ASSIGN_OR_RETURN(ip.gateway, optional_ip(v, path, "gateway"));
  FABRIC_ASSIGN_OR_RETURN(ip.interface, optional_int(v, path, "interface", 0, INT_MAX));
  // IPAM output has no interfaces to point into; a full result must point at one of its own.
  if (ip.interface && interface_count > 0 &&
      static_cast<std::size_t>(*ip.interface) >= interface_count) {
    return Error(ErrorCode::kInvalidConfig, json::field_path(path, "interface"),
                 "index " + std::to_string(*ip.interface) + " is past the " +
                     std::to_string(interface_count) + " interfaces");
  }
  FABRIC_ASSIGN_OR_RETURN(auto version, json::get_optional_string(v, path, "version"));
  if (version) {
    bool v4 = is_ipv4_address(ip.address.substr(0, ip.address.find('/')));
    if (*version != "4" && *version != "6") {
      return Error(ErrorCode::kInvalidConfig, json::field_path(path, "version"),
                   "must be \"4\" or \"6\" (got \"" + *version + "\")");
    }
    if ((*version == "4") != v4) {
      return Error(ErrorCode::kInvalidConfig, json::field_path(path, "version"),
                   "\"" + *version + "\" does not match address " + ip.address);
    }
  }
  if (ip.gateway) {
    bool addr_v4 = is_ipv4_address(ip.address.substr(0, ip.address.find('/')));
    if (addr_v4 != is_ipv4_address(*ip.gateway)) {
      return Error(ErrorCode::kInvalidConfig, json::field_path(path, "gateway"),
                   *ip.gateway + " is not in the address family of " + ip.address);
    }
  }
  return ip;
}

Result<Route> parse_route(const Value& v, const std::string& path) {
  if (!v.IsObject()) return Error(ErrorCode::kInvalidConfig, path, "must be an object");
  Route route;
  FABRIC_ASSIGN_OR_RETURN(route.dst, required_cidr(v, path, "dst"));
  FABRIC_ASSIGN_OR_RETURN(route.gw, optional_ip(v, path, "gw"));
  FABRIC_ASSIGN_OR_RETURN(route.mtu, optional_int(v, path, "mtu", 0, INT_MAX));
  FABRIC_ASSIGN_OR_RETURN(route.advmss, optional_int(v, path, "advmss", 0, INT_MAX));
  FABRIC_ASSIGN_OR_RETURN(route.priority, optional_int(v, path, "priority", 0, INT_MAX));
  FABRIC_ASSIGN_OR_RETURN(route.table, optional_int(v, path, "table", 0, INT_MAX));
  // RT_SCOPE_* is one byte (rtnetlink.h).
  FABRIC_ASSIGN_OR_RETURN(route.scope, optional_int(v, path, "scope", 0, 255));
  return route;
}

Result<Dns> parse_dns(const Value& obj) {
  Dns dns;
  const Value* v = json::find_non_null(obj, "dns");
  if (v == nullptr) return dns;
  if (!v->IsObject()) return Error(ErrorCode::kInvalidConfig, "dns", "must be an object");
  FABRIC_ASSIGN_OR_RETURN(dns.nameservers, string_array(*v, "dns", "nameservers"));
  FABRIC_ASSIGN_OR_RETURN(dns.search, string_array(*v, "dns", "search"));
  FABRIC_ASSIGN_OR_RETURN(dns.options, string_array(*v, "dns", "options"));
  FABRIC_ASSIGN_OR_RETURN(auto domain, json::get_optional_string(*v, "dns", "domain"));
  dns.domain = domain.value_or("");
  return dns;
}

void write_strings(json::Writer& w, std::string_view key, const std::vector<std::string>& list) {
  if (list.empty()) return;
  w.key(key).begin_array();
  for (const auto& s : list)
    w.value(s);
  w.end_array();
}

void write_optional(json::Writer& w, std::string_view key, const std::optional<int>& v) {
  if (v) w.field(key, *v);
}

void write_nonempty(json::Writer& w, std::string_view key, const std::string& v) {
  if (!v.empty()) w.field(key, v);
}

std::string_view output_version(std::string_view cni_version) {
  return cni_version.empty() || !is_supported(cni_version) ? kLatestVersion : cni_version;
}

} // namespace

bool is_ipv4_address(std::string_view text) {
  // inet_pton stops at a NUL; an embedded one would pass "10.0.0.1\0junk" as an address.
  if (text.size() > INET6_ADDRSTRLEN || text.find('\0') != std::string_view::npos) return false;
  in_addr addr{};
  std::string s(text);
  return inet_pton(AF_INET, s.c_str(), &addr) == 1;
}

bool is_ip_address(std::string_view text) {
  if (text.size() > INET6_ADDRSTRLEN || text.find('\0') != std::string_view::npos) return false;
  in6_addr addr6{};
  std::string s(text);
  return is_ipv4_address(text) || inet_pton(AF_INET6, s.c_str(), &addr6) == 1;
}

bool is_cidr(std::string_view text) {
  std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view addr = text.substr(0, slash);
  std::string_view prefix = text.substr(slash + 1);
  if (prefix.empty() || prefix.size() > 3 ||
      prefix.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  int bits = 0;
  std::from_chars(prefix.data(), prefix.data() + prefix.size(), bits);
  if (is_ipv4_address(addr)) return bits <= 32;
  return is_ip_address(addr) && bits <= 128;
}

Result<CniResult> parse_result(std::string_view text) {
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document doc, json::parse(text, "result"));
  if (!doc.IsObject()) return Error(ErrorCode::kDecode, "result", "must be a JSON object");
  CniResult result;
  FABRIC_ASSIGN_OR_RETURN(auto version, json::get_optional_string(doc, "", "cniVersion"));
  if (version && !version->empty()) {
    FABRIC_TRY(check_supported(*version));
    result.cni_version = *version;
  }

  FABRIC_ASSIGN_OR_RETURN(const Value* interfaces, optional_array(doc, "", "interfaces"));
  if (interfaces != nullptr) {
    for (rapidjson::SizeType i = 0; i < interfaces->Size(); ++i) {
      FABRIC_ASSIGN_OR_RETURN(Interface iface,
                              parse_interface((*interfaces)[i], index_path("interfaces", i)));
      result.interfaces.push_back(std::move(iface));
    }
  }
  FABRIC_ASSIGN_OR_RETURN(const Value* ips, optional_array(doc, "", "ips"));
  if (ips != nullptr) {
    for (rapidjson::SizeType i = 0; i < ips->Size(); ++i) {
      FABRIC_ASSIGN_OR_RETURN(IpConfig ip,
                              parse_ip((*ips)[i], index_path("ips", i), result.interfaces.size()));
      result.ips.push_back(std::move(ip));
    }
  }
  FABRIC_ASSIGN_OR_RETURN(const Value* routes, optional_array(doc, "", "routes"));
  if (routes != nullptr) {
    for (rapidjson::SizeType i = 0; i < routes->Size(); ++i) {
      FABRIC_ASSIGN_OR_RETURN(Route route, parse_route((*routes)[i], index_path("routes", i)));
      result.routes.push_back(std::move(route));
    }
  }
  FABRIC_ASSIGN_OR_RETURN(result.dns, parse_dns(doc));
  return result;
}

std::string render_result(const CniResult& result, std::string_view cni_version) {
  const bool ip_version = result_has_ip_version(cni_version);
  const bool v1_1 = result_has_1_1_fields(cni_version);
  json::Writer w;
  w.begin_object();
  w.field("cniVersion", cni_version);
  if (!result.interfaces.empty()) {
    w.key("interfaces").begin_array();
    for (const auto& iface : result.interfaces) {
      w.begin_object();
      w.field("name", iface.name);
      write_nonempty(w, "mac", iface.mac);
      if (v1_1) write_optional(w, "mtu", iface.mtu);
      write_nonempty(w, "sandbox", iface.sandbox);
      if (v1_1) {
        write_nonempty(w, "socketPath", iface.socket_path);
        write_nonempty(w, "pciID", iface.pci_id);
      }
      write_nonempty(w, "rdmaDevice", iface.rdma_device);
      write_optional(w, "gidIndex", iface.gid_index);
      w.end_object();
    }
    w.end_array();
  }
  if (!result.ips.empty()) {
    w.key("ips").begin_array();
    for (const auto& ip : result.ips) {
      w.begin_object();
      if (ip_version) {
        w.field("version", is_ipv4_address(ip.address.substr(0, ip.address.find('/'))) ? "4" : "6");
      }
      write_optional(w, "interface", ip.interface);
      w.field("address", ip.address);
      if (ip.gateway) w.field("gateway", *ip.gateway);
      w.end_object();
    }
    w.end_array();
  }
  if (!result.routes.empty()) {
    w.key("routes").begin_array();
    for (const auto& route : result.routes) {
      w.begin_object();
      w.field("dst", route.dst);
      if (route.gw) w.field("gw", *route.gw);
      if (v1_1) {
        write_optional(w, "mtu", route.mtu);
        write_optional(w, "advmss", route.advmss);
        write_optional(w, "priority", route.priority);
        write_optional(w, "table", route.table);
        write_optional(w, "scope", route.scope);
      }
      w.end_object();
    }
    w.end_array();
  }
  // libcni's plugins always write "dns", empty or not; runtimes expect the key.
  w.key("dns").begin_object();
  write_strings(w, "nameservers", result.dns.nameservers);
  write_nonempty(w, "domain", result.dns.domain);
  write_strings(w, "search", result.dns.search);
  write_strings(w, "options", result.dns.options);
  w.end_object();
  w.end_object();
  return w.str();
}

std::string render_error(const Error& error, std::string_view cni_version,
                         std::optional<int> code_override) {
  json::Writer w;
  w.begin_object();
  w.field("cniVersion", output_version(cni_version));
  w.field("code", code_override.value_or(cni_code_for(error.code())));
  w.field("msg", error.message());
  write_nonempty(w, "details", error.hint());
  w.end_object();
  return w.str();
}

std::string render_version_reply(std::string_view cni_version) {
  json::Writer w;
  w.begin_object();
  w.field("cniVersion", cni_version);
  write_strings(w, "supportedVersions", supported_versions());
  w.end_object();
  return w.str();
}

Result<PluginError> parse_error(std::string_view text) {
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document doc, json::parse(text, "error object"));
  if (!doc.IsObject()) return Error(ErrorCode::kDecode, "error object", "must be a JSON object");
  PluginError e;
  FABRIC_ASSIGN_OR_RETURN(auto code, json::get_optional_int(doc, "", "code"));
  if (!code) return Error(ErrorCode::kDecode, "error object", "has no \"code\"");
  if (*code < 0 || *code > INT_MAX) {
    return Error(ErrorCode::kDecode, "error object",
                 "code " + std::to_string(*code) + " is not a CNI error code");
  }
  e.code = static_cast<int>(*code);
  FABRIC_ASSIGN_OR_RETURN(auto msg, json::get_optional_string(doc, "", "msg"));
  FABRIC_ASSIGN_OR_RETURN(auto details, json::get_optional_string(doc, "", "details"));
  e.msg = msg.value_or("");
  e.details = details.value_or("");
  return e;
}

Route with_default_gateway(Route route, const std::vector<IpConfig>& ips) {
  if (route.gw) return route;
  const bool v4 = is_ipv4_address(route.dst.substr(0, route.dst.find('/')));
  for (const auto& ip : ips) {
    if (ip.gateway && is_ipv4_address(*ip.gateway) == v4) {
      route.gw = ip.gateway;
      break;
    }
  }
  return route;
}

ErrorCode error_code_for_cni(int cni_code) {
  switch (cni_code) {
  case 1: return ErrorCode::kIncompatibleVersion;
  case 2: return ErrorCode::kInvalidConfig; // unsupported field in the configuration
  case 3: return ErrorCode::kNotFound;      // container unknown or does not exist
  case 4: return ErrorCode::kInvalidEnvironment;
  case 6: return ErrorCode::kDecode;
  case 7: return ErrorCode::kInvalidConfig;
  case 11: return ErrorCode::kTryAgain;
  default: return ErrorCode::kSystem; // 5 (I/O), 50/51 (STATUS), 999 and plugin codes
  }
}

} // namespace fabric::cni
