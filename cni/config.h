// The network configuration fabric-cni reads from stdin: a NetworkAttachmentDefinition's
// config as Multus or a runtime hands it over, plus what the runtime adds (runtimeConfig,
// args, prevResult, cni.dev/valid-attachments).
//
// Keys (camelCase as in every CNI plugin):
//   cniVersion, name, type ("fabric-cni")   required
//   mode            "shared" (default) | "exclusive"
//   master          parent netdev for shared mode
//   rdmaDevice      parent RDMA device (its netdev is the parent)
//   deviceID        PCI address; Multus injects it for device-plugin resources
//   pciBusID        PCI address; older Multus/SR-IOV configs use this name
//   mtu             68..65535
//   mac             MAC address for the pod interface (shared mode)
//   macvlanMode     "bridge" (default) | "private" | "vepa" | "passthru" (shared mode)
//   gidCheck        "require" (default) | "warn" | "off"
//   gidTimeoutMs    0..600000, default 5000
//   stateDir        absolute path, default /var/lib/cni/fabric
//   primaryInterface the pod's cluster-network interface whose addresses ADD records for
//                   the exporter's accounting, default "eth0" (Multus' name for it); ""
//                   records none
//   logFile         absolute path; logLevel: trace|debug|info|warn|error|critical|off
//   ipam            {"type": ..., ...}: delegated; "ipam": {} means no IPAM, as in the
//                   reference plugins
//   runtimeConfig   mac, deviceID, ips, CNIDeviceInfoFile (Multus capabilities)
//   args            args.cni.ips
// Unknown keys are ignored: runtimes and Multus add their own.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cni/command.h"
#include "cni/env.h"
#include "cni/modes.h"
#include "common/result.h"

namespace fabric::cni {

inline constexpr std::string_view kPluginType = "fabric-cni";
inline constexpr int kMinMtu = 68; // IPv4's minimum (RFC 791); the kernel refuses less
inline constexpr int kMaxMtu = 65535;
inline constexpr int64_t kMaxGidTimeoutMs = 600000;
// The most fabric-cni reads from stdin (1 MiB); a larger configuration is refused unread.
inline constexpr std::size_t kMaxNetConfBytes = 1 << 20;
inline constexpr const char* kValidAttachmentsKey = "cni.dev/valid-attachments";
// The name an earlier draft of the 1.1.0 spec used; libcni sends both (cni issue #1101).
inline constexpr const char* kLegacyAttachmentsKey = "cni.dev/attachments";

struct ValidAttachment {
  std::string container_id, ifname;
  bool operator==(const ValidAttachment&) const = default;
};

struct NetConf {
  std::string cni_version, name, type;
  Mode mode = Mode::kShared;
  std::string master, rdma_device, device_id, pci_bus_id; // parent selectors from config
  std::optional<int> mtu;
  std::optional<std::string> mac; // config-level, lower-case
  MacvlanMode macvlan_mode = MacvlanMode::kBridge;
  GidCheck gid_check = GidCheck::kRequire;
  std::chrono::milliseconds gid_timeout{5000};   // key gidTimeoutMs
  std::string state_dir = "/var/lib/cni/fabric"; // key stateDir
  std::string primary_interface = "eth0";        // primaryInterface
  std::optional<std::string> log_file;           // logFile
  std::string log_level = "info";                // logLevel
  std::optional<std::string> ipam_type;          // ipam.type, if an ipam section names one
  // runtimeConfig (Multus fills it for declared capabilities)
  std::optional<std::string> runtime_mac, runtime_device_id, device_info_file; // CNIDeviceInfoFile
  std::vector<std::string> runtime_ips;
  std::vector<std::string> args_ips;              // args.cni.ips
  std::vector<ValidAttachment> valid_attachments; // GC: cni.dev/valid-attachments
  std::optional<std::string> prev_result;         // raw JSON of prevResult, if any
  std::string raw;                                // stdin text, passed unchanged to IPAM
};

// Parses and validates stdin for `command`. Malformed JSON is kDecode (CNI code 6) with
// line and column; a wrong type or value is kInvalidConfig (code 7) naming the field; a
// missing or unsupported cniVersion, or one that predates the command (CHECK < 0.4.0,
// GC/STATUS < 1.1.0), is kIncompatibleVersion (code 1). The order of checks follows skel:
// JSON, name, then version, then our own keys.
// - VERSION reads nothing (skel does not read stdin for it): the result carries only
//   `raw` and cni_version = kLatestVersion.
// - GC requires cni.dev/valid-attachments (falling back to cni.dev/attachments): a
//   missing list would read as "nothing is valid" and delete everything.
// - CHECK requires prevResult (the spec makes the runtime send it).
// - ADD and CHECK need a parent selector: master, rdmaDevice, deviceID, pciBusID or
//   runtimeConfig.deviceID.
// - mode "exclusive" refuses macvlanMode, mac and runtimeConfig.mac: the pod gets the
//   whole device as it is, there is no macvlan to configure.
Result<NetConf> parse_netconf(std::string_view stdin_text, Command command);

// The effective MAC: runtimeConfig.mac > CNI_ARGS MAC > config mac, lower-cased. A
// malformed CNI_ARGS MAC is kInvalidEnvironment naming it; any MAC in exclusive mode is
// kInvalidConfig.
Result<std::optional<std::string>> effective_mac(const NetConf& conf, const CniEnv& env);
// The effective PCI/device id: runtimeConfig.deviceID > top-level deviceID > pciBusID.
std::optional<std::string> effective_device_id(const NetConf& conf);

// Helpers shared with the tests and the rest of the plugin.
// "aa:bb:cc:dd:ee:ff" (either case), unicast and not all zero; lower-cased on success.
// kInvalidConfig naming `field` (common/hw_address.h parses).
Result<std::string> normalize_mac(std::string_view mac, std::string_view field);
// An absolute path without NUL bytes (stateDir, logFile, CNIDeviceInfoFile); kInvalidConfig
// naming `field`. main() checks logFile with it before opening the file: a relative path
// would land in whatever directory the runtime runs plugins from.
Result<void> check_absolute_path(std::string_view value, std::string_view field);
// A file name to look up on CNI_PATH: printable, no '/', not "." or "..".
bool is_plugin_name(std::string_view name);

std::string_view mode_name(Mode mode);
std::string_view macvlan_mode_name(MacvlanMode mode);
std::string_view gid_check_name(GidCheck check);

} // namespace fabric::cni
