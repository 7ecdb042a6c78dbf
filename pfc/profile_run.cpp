#include "pfc/profile_run.h"

#include "common/json.h"
#include "pfc/apply.h"

namespace fabric::pfc {
namespace {

DeviceRun run_one(ProfileCommand command, DcbDevice& device, HostKnobs& knobs,
                  const std::string& dev, const DesiredConfig& desired) {
  DeviceRun run;
  run.dev = dev;
  if (command == ProfileCommand::kApply) {
    auto report = apply_profile(device, knobs, dev, desired);
    if (!report.ok()) {
      run.exit_status = exit_status_for(report.error().code());
      run.failure = std::move(report).error();
      return run;
    }
    run.report_text = render_apply_text(*report);
    run.report_json = render_apply_json(*report);
    if (report->dcb_write_error) {
      run.exit_status = kExitSystem;
    } else if (!report->fully_applied()) {
      run.exit_status = kExitBelowThreshold;
    }
    return run;
  }
  auto plan = verify_profile(device, knobs, dev, desired);
  if (!plan.ok()) {
    run.exit_status = exit_status_for(plan.error().code());
    run.failure = std::move(plan).error();
    if (command == ProfileCommand::kPlan) run.desired = desired_values(desired);
    return run;
  }
  run.report_text = render_plan_text(*plan);
  run.report_json = render_plan_json(*plan);
  if (command == ProfileCommand::kVerify) {
    if (auto synced = require_in_sync(*plan); !synced.ok()) {
      run.exit_status = exit_status_for(synced.error().code());
      run.verdict = std::move(synced).error();
    }
  }
  return run;
}

// How bad a device's outcome is. Exit statuses are not in that order: a device that could
// not be read (2) is worse than one whose profile did not hold (3), and both are worse than
// one that has no DCB at all (4), which the node DaemonSet tolerates. So 4 must never hide
// a 2 or a 3 on another device of the same run.
int severity(int exit_status) {
  switch (exit_status) {
  case kExitOk: return 0;
  case kExitUnsupported: return 1;
  case kExitBelowThreshold: return 2;
  case kExitSystem: return 3;
  default: return 4;
  }
}

} // namespace

int ProfileRun::exit_status() const {
  int worst = kExitOk;
  for (const auto& d : devices) {
    if (severity(d.exit_status) > severity(worst)) worst = d.exit_status;
  }
  return worst;
}

ProfileRun run_profile(ProfileCommand command, DcbDevice& device, HostKnobs& knobs,
                       const std::vector<std::string>& devs, const DesiredConfig& desired) {
  ProfileRun run;
  for (const auto& dev : devs)
    run.devices.push_back(run_one(command, device, knobs, dev, desired));
  return run;
}

Result<std::string> render_profile_run_json(const std::string& profile_name,
                                            const ProfileRun& run) {
  rapidjson::Document out(rapidjson::kObjectType);
  auto& alloc = out.GetAllocator();
  out.AddMember("schema_version", json::kSchemaVersion, alloc);
  out.AddMember("profile", rapidjson::Value(profile_name, alloc), alloc);
  rapidjson::Value devices(rapidjson::kArrayType);
  for (const auto& d : run.devices) {
    rapidjson::Value entry(rapidjson::kObjectType);
    if (d.failure) {
      entry.AddMember("device", rapidjson::Value(d.dev, alloc), alloc);
      entry.AddMember("error", rapidjson::Value(d.failure->message(), alloc), alloc);
      rapidjson::Value hint;
      if (!d.failure->hint().empty()) hint.SetString(d.failure->hint(), alloc);
      entry.AddMember("hint", hint, alloc);
      if (!d.desired.empty()) {
        rapidjson::Value desired(rapidjson::kArrayType);
        for (const auto& v : d.desired) {
          rapidjson::Value item(rapidjson::kObjectType);
          item.AddMember("attribute", rapidjson::Value(v.attribute, alloc), alloc);
          item.AddMember("value", rapidjson::Value(v.value, alloc), alloc);
          desired.PushBack(item, alloc);
        }
        entry.AddMember("desired", desired, alloc);
      }
    } else {
      auto report = json::parse(d.report_json, "the report of " + d.dev);
      if (!report.ok()) {
        return Error(ErrorCode::kInternal, "rendering the JSON output", report.error().message());
      }
      entry.CopyFrom(*report, alloc);
    }
    devices.PushBack(entry, alloc);
  }
  out.AddMember("devices", devices, alloc);
  return json::to_string(out, true) + "\n";
}

std::string render_profile_run_text(const ProfileRun& run) {
  std::string text;
  for (const auto& d : run.devices) {
    text += d.report_text;
    if (!d.failure || d.desired.empty()) continue;
    text += d.dev + ": cannot take this profile (" + d.failure->message() + "); it would set\n";
    for (const auto& v : d.desired)
      text += "  " + v.attribute + ": " + v.value + "\n";
  }
  return text;
}

} // namespace fabric::pfc
