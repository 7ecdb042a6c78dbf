// Validation of the identifiers a runtime hands us before any of them reaches the
// filesystem (state file names, lock files) or netlink (interface names).
//
// The CNI spec restricts container IDs and network names to alphanumerics plus '_', '.'
// and '-', starting with an alphanumeric; interface names follow the kernel's rules
// (at most 15 bytes, no '/', ':' or whitespace, not "." or ".."). Both checks also keep
// "../" out of every path we build from them.
#pragma once

#include <string_view>

#include "common/result.h"

namespace fabric::cni {

// The kernel's IFNAMSIZ is 16 including the terminating NUL.
inline constexpr std::size_t kMaxInterfaceNameLength = 15;
// Long enough for every runtime's IDs (containerd and CRI-O use 64 hex digits); short
// enough that "<id>-<ifname>.json" stays far below NAME_MAX.
inline constexpr std::size_t kMaxContainerIdLength = 128;
inline constexpr std::size_t kMaxNetworkNameLength = 128;

// `field` names the source of the value in the error ("CNI_CONTAINERID", "name").
Result<void> validate_container_id(std::string_view id, std::string_view field);
Result<void> validate_network_name(std::string_view name, std::string_view field);
Result<void> validate_interface_name(std::string_view name, std::string_view field);

} // namespace fabric::cni
