// plan: what would change if a profile were applied to a device. A pure function of
// the device's current state and the profile, so plan, apply and verify agree on what
// "different" means, and tests need no kernel.
//
// Attributes use iproute2 `dcb -j` names ("pfc.prio_pfc", "ets.tc_bw", "app.dscp_prio",
// "buffer.prio_buffer", "maxrate.tc_maxrate") plus the host knobs ("ecn.roce_np",
// "ecn.roce_rp", "rdma.cm_default_tos", "rdma.cm_default_roce_mode",
// "rdma.traffic_class"); values read as dcb prints them ("0:off 1:off 2:off 3:on ...",
// "0:ets 1:ets ... 6:strict 7:ets", "26:3 48:6").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "libs/dcb/dcb_config.h"
#include "libs/host_knobs/host_knobs.h"
#include "pfc/profile.h"

namespace fabric::pfc {

struct Difference {
  std::string attribute; // "pfc.prio_pfc"
  std::string current;   // "0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off"
  std::string desired;   // "0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"
};

struct Plan {
  std::string dev;
  std::vector<Difference> differences;
  // The DCB change to send: only the parts that differ. PFC, ETS, buffer and maxrate are
  // whole structs in the kernel, so a part that differs is the device's current struct
  // with the profile's fields replaced (read-modify-write): fields the profile does not
  // name are sent back as the device has them.
  DcbChange change;
  // The host knobs that differ, with their desired values (rdma_device: the RDMA device
  // they belong to).
  HostState host_change;
  // What the profile asks for that the device or host does not expose, each as
  // "PART: why", PART being a group ("pfc", "ets", "buffer", "maxrate") or an attribute
  // ("ecn.roce_np"): "pfc: the device does not report PFC (...)".
  std::vector<std::string> unavailable;

  // No attribute the device exposes differs from the profile (unavailable parts aside:
  // see require_in_sync() in apply.h for the check that counts them too).
  bool in_sync() const { return differences.empty(); }
  const Difference* find(std::string_view attribute) const;
};

// The attributes a profile names, in plan order: what apply reports on one by one.
std::vector<std::string> attributes_named_by(const DesiredConfig& desired);

// A profile's values as dcb prints them, attribute by attribute in plan order: what plan
// shows for a device that cannot be compared (no DCB), so the desired state is still seen.
struct DesiredValue {
  std::string attribute; // "pfc.prio_pfc"
  std::string value;     // "0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"
};
std::vector<DesiredValue> desired_values(const DesiredConfig& desired);

// Compares. Errors (kInvalidConfig) are for desired values no device could take, such
// as a priority mapped to traffic class 9, and name the attribute.
Result<Plan> make_plan(const std::string& dev, const DcbState& current, const HostState& host,
                       const DesiredConfig& desired);

// "eth2: 2 differences\n  pfc.prio_pfc: 0:off ... -> 0:off ... 3:on ...\n..." or
// "eth2: in sync\n", then "  not available: ..." lines.
std::string render_plan_text(const Plan& plan);
// {"schema_version":1,"device","in_sync","differences":[{"attribute","current",
// "desired"}],"unavailable":[...]}
std::string render_plan_json(const Plan& plan, bool pretty = true);

} // namespace fabric::pfc
