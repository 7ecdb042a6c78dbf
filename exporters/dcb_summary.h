// A DCB configuration as one canonical text and a stable hash of it, for
// fabric_dcb_config_info{hash=...}: equal configurations hash equally on every node, so
// `count by (hash)` finds the odd node out. Counters (PFC requests/indications), the
// read-only total buffer size and what the peer advertised are left out: they differ
// between nodes configured alike.
#pragma once

#include <string>

#include "libs/dcb/dcb_config.h"

namespace fabric::exporters {

std::string canonical_dcb_text(const pfc::DcbState& state);
// 16 lowercase hex digits of fnv1a64(canonical_dcb_text(state)) (stable_hash.h).
std::string dcb_config_hash(const pfc::DcbState& state);

} // namespace fabric::exporters
