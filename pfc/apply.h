// apply and verify: bring a device in line with a profile, then prove it by reading
// everything back. The kernel's answer to a DCB set is not enough: dcbnl skips, without
// a word, any part whose op the driver lacks, and stops at the first op that fails after
// applying the ones before it. So the report says, attribute by attribute, what the
// device reports after the change, not what was sent.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "libs/dcb/dcb_config.h"
#include "libs/host_knobs/host_knobs.h"
#include "pfc/plan.h"
#include "pfc/profile.h"

namespace fabric::pfc {

enum class Outcome {
  kApplied,         // differed, was written, and reads back as the profile says
  kUnchanged,       // already as the profile says; not written
  kIgnoredByDevice, // the set succeeded but the read-back still differs: driver skipped it
  kFailed,          // the write failed, or the read-back shows another value
  kNotAvailable,    // the device or host does not expose it
  kUnverified,      // written, but the read-back failed, so nobody knows
};
std::string_view outcome_name(Outcome outcome); // "applied", "ignored_by_device", ...

// The knobs part of a profile: a HostState whose set fields are the wanted values.
HostState desired_host_state(const DesiredConfig& desired);

struct AttributeOutcome {
  std::string attribute; // "ets.tc_bw", or a part for kNotAvailable ("pfc", "ecn.roce_np")
  Outcome outcome;
  std::string detail; // applied: "OLD -> NEW"; otherwise why, in words
};

struct ApplyReport {
  std::string dev;
  bool was_in_sync = false;                 // nothing differed, so nothing was written
  bool dcb_write_attempted = false;         // DcbDevice::write was called (once)
  std::optional<Error> dcb_write_error;     // it failed: the kernel refused the DCB change
  std::optional<Error> host_error;          // the host knobs could not even be read
  std::optional<Error> readback_error;      // the read-back after writing failed
  std::vector<AttributeOutcome> attributes; // every attribute the profile names

  // Everything the profile names is on the device: nothing failed, ignored, unverified
  // or unavailable.
  bool fully_applied() const;
  int count(Outcome outcome) const;
  const AttributeOutcome* find(std::string_view attribute) const;
};

// Reads the device and host, plans, and when anything differs sends the DCB change in
// one DcbDevice::write, sets the host knobs, reads everything back and reports. Errors
// are for what stops it before anything is written: the device cannot be read (kNotFound
// for a missing netdev, kUnsupported for one without DCB, kPermission), or the profile
// has impossible values. Anything that goes wrong once writing has begun is in the report.
// The host knobs do not depend on DCB, so they are set even when the DCB write fails.
Result<ApplyReport> apply_profile(DcbDevice& device, HostKnobs& knobs, const std::string& dev,
                                  const DesiredConfig& desired);

// Reads and plans: what `plan` shows and what `verify` checks.
Result<Plan> verify_profile(DcbDevice& device, HostKnobs& knobs, const std::string& dev,
                            const DesiredConfig& desired);

// verify's verdict as an error for the CLI's exit status: kBelowThreshold (exit 3) when
// attributes drifted, "eth2: 2 attributes drifted from the profile (pfc.prio_pfc,
// ets.tc_bw)"; kUnsupported (exit 4) when nothing drifted but parts of the profile are
// not available here.
Result<void> require_in_sync(const Plan& plan);
// apply's verdict: the DCB write's own error when it failed; kUnsupported when the device
// ignored or lacks parts; kSystem when something else failed.
Result<void> require_fully_applied(const ApplyReport& report);

// "eth2: applied 5, unchanged 2\n  applied            pfc.prio_pfc: 0:off ... -> ...\n..."
std::string render_apply_text(const ApplyReport& report);
// {"schema_version":1,"device","was_in_sync","fully_applied","dcb_write":{"attempted",
// "error"},"host_error","readback_error","attributes":[{"attribute","outcome","detail"}]}
std::string render_apply_json(const ApplyReport& report, bool pretty = true);

} // namespace fabric::pfc
