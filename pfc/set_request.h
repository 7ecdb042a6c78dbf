// `fabric-pfc set`: dcb-style imperative changes ("prio-pfc 3:on", "dscp-prio 26:3"),
// turned into a DesiredConfig against the device's current state (read-modify-write) so
// that set goes through the same apply-and-read-back path as a profile.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "libs/dcb/dcb_config.h"
#include "pfc/profile.h"

namespace fabric::pfc {

struct SetRequest {
  std::vector<std::string> prio_pfc{}; // "3:on", "all:off"
  std::optional<uint16_t> pfc_delay{};
  std::optional<bool> ets_willing{};
  std::vector<std::string> prio_tc{};   // "3:3", "all:0"
  std::vector<std::string> tc_bw{};     // "0:50" (percent)
  std::vector<std::string> tc_tsa{};    // "6:strict"
  std::vector<std::string> dscp_prio{}; // "26:3": added to the APP table
  bool empty() const {
    return prio_pfc.empty() && !pfc_delay && !ets_willing && prio_tc.empty() && tc_bw.empty() &&
           tc_tsa.empty() && dscp_prio.empty();
  }
};

// Errors name the option and the item: "--prio-pfc 9:on: priority 9 is out of range (0-7)".
// Changing PFC or ETS on a device that does not report it is kUnsupported.
Result<DesiredConfig> desired_from_set(const SetRequest& request, const DcbState& current);

// The request's own errors (a priority out of range, a missing ':'), found before any
// device is read: `set eth0 --prio-pfc 9:on` is a usage error whatever eth0 is.
Result<void> check_set_request(const SetRequest& request);

} // namespace fabric::pfc
