// CNI result, error and version documents: parsing what IPAM plugins and runtimes hand
// us (IPAM output, prevResult) in any supported version, and rendering our own stdout.
//
// Shapes by version (libcni pkg/types/040 and pkg/types/100):
//   0.3.0, 0.3.1, 0.4.0  ips[] carry "version": "4" or "6"
//   1.0.0                ips[] without "version"
//   1.1.0                adds interfaces[].mtu/socketPath/pciID and
//                        routes[].mtu/advmss/priority/table/scope
// Rendering leaves out whatever the requested version does not have.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fabric::cni {

struct Interface {
  std::string name, mac;
  std::optional<int> mtu;          // 1.1.0
  std::string sandbox;             // the netns path for interfaces inside a container
  std::string socket_path, pci_id; // 1.1.0
  // fabric-cni's own keys, in every version: the RDMA device behind the interface and the
  // index of the pod's RoCE v2 GID on it ("rdmaDevice", "gidIndex"). libcni and Multus
  // ignore keys they do not know; a person or a script reading the plugin's output, or
  // the exporter, gets the GID to use without looking it up.
  std::string rdma_device;
  std::optional<int> gid_index;
  bool operator==(const Interface&) const = default;
};

struct IpConfig {
  std::string address; // CIDR: "10.1.0.5/24"
  std::optional<std::string> gateway;
  std::optional<int> interface; // index into interfaces
  bool operator==(const IpConfig&) const = default;
};

struct Route {
  std::string dst; // CIDR
  std::optional<std::string> gw = std::nullopt;
  // 1.1.0
  std::optional<int> mtu = std::nullopt, advmss = std::nullopt, priority = std::nullopt,
                     table = std::nullopt, scope = std::nullopt;
  bool operator==(const Route&) const = default;
};

struct Dns {
  std::vector<std::string> nameservers, search, options;
  std::string domain;
  bool operator==(const Dns&) const = default;
  bool empty() const {
    return nameservers.empty() && search.empty() && options.empty() && domain.empty();
  }
};

struct CniResult {
  std::string cni_version; // of the parsed document; render_result takes its own
  std::vector<Interface> interfaces;
  std::vector<IpConfig> ips;
  std::vector<Route> routes;
  Dns dns;
};

// Parses a result of any version 0.3.0..1.1.0 (IPAM output, prevResult). A missing
// cniVersion is accepted (IPAM plugins always write one; prevResult is read under the
// configuration's version); an older or unknown one is kIncompatibleVersion. Malformed
// JSON is kDecode with line and column; a wrong field is kInvalidConfig naming it
// ("ips[1].address: ..."). Addresses, gateways and routes are checked to be IP addresses
// and CIDRs; ips[].version, when present, must match the address family. Unknown keys
// are ignored.
Result<CniResult> parse_result(std::string_view json);

// The result in the shape of `cni_version` (see above), with that cniVersion. Exactly one
// JSON document, newline-terminated.
std::string render_result(const CniResult& result, std::string_view cni_version);

// The spec's error object {"cniVersion", "code", "msg", "details"}: msg is the error's
// one-line message (context, operation, detail), details its hint (left out when empty).
// The code is cni_code_for(error.code()) unless `code_override` is given (STATUS uses 50
// and 51, a delegated plugin's own code is passed on). An empty or unsupported cni_version
// (the error may be about the version itself) is written as kLatestVersion.
std::string render_error(const Error& error, std::string_view cni_version,
                         std::optional<int> code_override = std::nullopt);

// VERSION's reply: {"cniVersion": <cni_version>, "supportedVersions": [...]}. libcni's skel
// answers with the newest version it implements; pass kLatestVersion to do the same.
std::string render_version_reply(std::string_view cni_version);

// An error object read from another plugin's stdout ("cniVersion" is optional: libcni's
// Go plugins leave it out).
struct PluginError {
  int code = 0;
  std::string msg, details;
};
Result<PluginError> parse_error(std::string_view json);

// `route` as the reference plugins' ConfigureIface installs it: without a gw, it takes the
// gateway of the first of `ips` in its address family that has one (an IPAM plugin
// writes {"dst": "0.0.0.0/0"} and the range's gateway on the address); with a gw, or
// when no address of its family has a gateway, it is returned unchanged.
Route with_default_gateway(Route route, const std::vector<IpConfig>& ips);

// The spec's CNI error code as our ErrorCode, so that a delegated plugin's error keeps its
// meaning (and, for 1, 4, 6, 7 and 11, its number through cni_code_for()).
ErrorCode error_code_for_cni(int cni_code);

// Address-family checks used for results and configuration alike.
bool is_ip_address(std::string_view text);
bool is_ipv4_address(std::string_view text);
// "ADDRESS/PREFIX" with PREFIX within the family's width.
bool is_cidr(std::string_view text);

} // namespace fabric::cni
