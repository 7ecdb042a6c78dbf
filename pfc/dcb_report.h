// `fabric-pfc show`: the DCB state of a device for people and, with --json, in iproute2
// `dcb -j` naming (prio_pfc, tc_bw, tc_tsa, prio_tc, dscp_prio, ...).
#pragma once

#include <string>

#include "common/error.h"
#include "libs/dcb/dcb_config.h"

namespace fabric::pfc {

std::string render_state_text(const std::string& dev, const DcbState& state);

// {"schema_version": 1, "device": "eth2", "dcbx": "host ieee",
//  "pfc": {"pfc_cap", "macsec_bypass", "delay", "prio_pfc": {"0": false, ...},
//          "requests": [8], "indications": [8]},
//  "ets": {"willing", "ets_cap", "cbs", "tc_bw": [8], "tc_tsa": ["strict", ...],
//          "prio_tc": [8], "reco_tc_bw", "reco_tc_tsa", "reco_prio_tc"},
//  "app": {"dscp_prio": [[26, 3], ...], "ethtype_prio": ..., ...},
//  "buffer": {"prio_buffer": [8], "buffer_size": [8], "total_size"},
//  "maxrate": {"tc_maxrate": [8]},
//  "peer": {"pfc": ..., "ets": ..., "app": ...}}
// Attributes the device does not report are null.
// `pretty` false gives one line (for `watch --json`).
std::string render_state_json(const std::string& dev, const DcbState& state, bool pretty = true);

// `show --json` when the device could not be read: {"schema_version": 1, "device",
// "error", "hint"}, the same members as a failed device of plan/apply/verify --json.
std::string render_error_json(const std::string& dev, const Error& error);

} // namespace fabric::pfc
