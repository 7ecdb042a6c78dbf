// CNI spec versions: which ones fabric-cni speaks, how they order, which commands each one
// has and how its results look.
//
// A configuration without cniVersion: libcni's ConfigDecoder (pkg/version/conf.go) reads a
// missing or empty cniVersion as "0.1.0", and skel then refuses it with code 1
// ("incompatible CNI versions") because the plugin does not list 0.1.0. fabric-cni does the
// same (parse_netconf reports kIncompatibleVersion, CNI code 1). VERSION is the exception:
// skel answers it without reading stdin, so a runtime can always learn what we support.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "cni/command.h"
#include "common/result.h"

namespace fabric::cni {

// The newest spec version we implement; VERSION replies and errors that precede a known
// configuration version are written in it.
inline constexpr std::string_view kLatestVersion = "1.1.0";
// What libcni substitutes for a configuration without cniVersion.
inline constexpr std::string_view kImpliedVersion = "0.1.0";

// supportedVersions: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0 (0.1.0 and 0.2.0 results have a
// different shape, ip4/ip6, that nothing current sends).
const std::vector<std::string>& supported_versions();
bool is_supported(std::string_view version);
// kIncompatibleVersion naming the version and listing the supported ones.
Result<void> check_supported(std::string_view version);

// "MAJOR[.MINOR[.PATCH]]" with decimal parts, as libcni's version.ParseVersion reads it:
// missing parts are 0 and "" is 0.1.0. Anything else is a kIncompatibleVersion error.
Result<std::array<int, 3>> parse_version(std::string_view version);
// <0, 0 or >0 as a orders before, with or after b. A version that does not parse orders
// before every valid one (two invalid ones compare equal), so it never passes a
// "newer than" check.
int compare_versions(std::string_view a, std::string_view b);

// The first spec version with the command: CHECK came with 0.4.0, STATUS and GC with 1.1.0.
std::string_view first_version_with(Command command);
// kIncompatibleVersion when `version` predates the command ("config version does not allow
// GC" in skel's words).
Result<void> check_command_allowed(Command command, std::string_view version);

// 0.3.x and 0.4.0 results carry ips[].version ("4"/"6"); 1.x results do not.
bool result_has_ip_version(std::string_view version);
// 1.1.0 added interfaces[].mtu/socketPath/pciID and routes[].mtu/advmss/priority/table/scope.
bool result_has_1_1_fields(std::string_view version);

} // namespace fabric::cni
