// plan, apply and verify over several devices: each device's report or the error that
// kept it from having one, the exit status of the whole run, and the combined output.
// A device that could not be read (no such device, no DCB support, no permission) is
// part of the output with its error: a script reading `--json` sees every device it
// asked about.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "libs/dcb/dcb_config.h"
#include "libs/host_knobs/host_knobs.h"
#include "pfc/plan.h"
#include "pfc/profile.h"

namespace fabric::pfc {

enum class ProfileCommand { kPlan, kApply, kVerify };

struct DeviceRun {
  std::string dev;
  int exit_status = 0;
  // Why the device has no report (it could not be read, the profile cannot apply).
  std::optional<Error> failure;
  // plan, when the device has no report: what the profile would set, so that a device
  // without DCB still shows the desired state beside the reason it cannot take it.
  std::vector<DesiredValue> desired;
  // verify: the device's verdict (drift, parts unavailable), beside its report.
  std::optional<Error> verdict;
  std::string report_text;
  std::string report_json; // one device's JSON document (render_plan_json, render_apply_json)
};

struct ProfileRun {
  std::vector<DeviceRun> devices;
  // The worst device's: 2 kernel error, 3 drift or not fully applied, 4 unsupported.
  int exit_status() const;
};

ProfileRun run_profile(ProfileCommand command, DcbDevice& device, HostKnobs& knobs,
                       const std::vector<std::string>& devs, const DesiredConfig& desired);

// {"schema_version", "profile", "devices": [REPORT | {"device", "error", "hint"[,
// "desired": [{"attribute", "value"}]]}]}, in the
// order the devices were given. A report that is not a JSON document is an error (a bug
// to report), never rendered as null.
Result<std::string> render_profile_run_json(const std::string& profile_name, const ProfileRun& run);
// The reports one after the other; devices without one are reported on stderr.
std::string render_profile_run_text(const ProfileRun& run);

} // namespace fabric::pfc
