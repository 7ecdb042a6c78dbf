#include "pfc/apply.h"

#include "common/json.h"
#include "common/strings.h"

namespace fabric::pfc {
namespace {

bool is_host_knob(std::string_view attribute) {
  return attribute.starts_with("ecn.") || attribute.starts_with("rdma.");
}

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Turns a failed read into a sentence a user can act on. The DcbDevice says what failed
// (and usually names the device); this adds what it means for a profile.
Error read_error(Error e, const std::string& dev) {
  if (e.code() == ErrorCode::kUnsupported) {
    e.with_context(dev + " does not support DCB");
    if (e.hint().empty()) {
      e.with_hint("DCB needs a NIC driver with dcbnl support (mlx5, ice, bnxt_en, ...); "
                  "veth, bridges and soft-RoCE devices have none");
    }
  } else if (e.message().find(dev) == std::string::npos) {
    e.with_context("reading the DCB configuration of " + dev);
  }
  return e;
}

Result<Plan> read_and_plan(DcbDevice& device, HostKnobs& knobs, const std::string& dev,
                           const DesiredConfig& desired) {
  auto state = device.read(dev);
  if (!state.ok()) return read_error(std::move(state).error(), dev);
  auto which = KnobSelection::of(desired_host_state(desired));
  FABRIC_ASSIGN_OR_RETURN(
      HostState host,
      knobs.read(dev, desired.rdma_device, which).context("reading the host knobs of " + dev));
  return make_plan(dev, *state, host, desired);
}

// The part an "unavailable" entry is about: "pfc: the device does not..." -> "pfc".
std::string_view part_of(std::string_view unavailable) {
  return unavailable.substr(0, unavailable.find(": "));
}

bool covered_by_unavailable(const Plan& plan, std::string_view attribute) {
  for (const auto& u : plan.unavailable) {
    std::string_view part = part_of(u);
    if (attribute == part || (attribute.starts_with(part) && attribute.size() > part.size() &&
                              attribute[part.size()] == '.')) {
      return true;
    }
  }
  return false;
}

// Settles one attribute the profile names and that the device exposes, from the plan
// before the change, the plan after it (the read-back; null when that failed) and what
// the writes returned.
AttributeOutcome settle(const ApplyReport& report, const std::string& attribute, const Plan& before,
                        const Plan* after, const std::optional<KnobReport>& knob_report) {
  const Difference* was = before.find(attribute);
  const Difference* now = after ? after->find(attribute) : nullptr;
  if (!was) {
    if (now) {
      return {attribute, Outcome::kFailed,
              "matched the profile before, but the device now reports " + now->current +
                  " (changing another attribute reset it)"};
    }
    return {attribute, Outcome::kUnchanged, {}};
  }
  std::string change = was->current + " -> " + was->desired;

  if (is_host_knob(attribute)) {
    if (report.host_error)
      return {attribute, Outcome::kFailed, "not set: the host knobs could not be read"};
    const KnobResult* knob = knob_report ? knob_report->find(attribute) : nullptr;
    if (knob && knob->outcome == KnobOutcome::kFailed) {
      return {attribute, Outcome::kFailed, knob->detail};
    }
    if (!after) return {attribute, Outcome::kUnverified, "written; the read-back failed"};
    if (now) {
      return {attribute, Outcome::kFailed,
              "wrote " + was->desired + " but it reads back " + now->current};
    }
    return {attribute, Outcome::kApplied, change};
  }

  if (!after) {
    return {attribute, Outcome::kUnverified,
            report.dcb_write_error ? "the DCB change failed and so did the read-back: the "
                                     "device may hold part of the change"
                                   : "sent; the read-back failed"};
  }
  if (report.dcb_write_error) {
    // dcbnl applies ETS, maxrate, PFC, buffer and APP in that order and stops at the
    // first failing op, so only the read-back says what got through.
    if (now)
      return {attribute, Outcome::kFailed, "not applied: the device still reports " + now->current};
    return {attribute, Outcome::kApplied, change + " (applied before the DCB change failed)"};
  }
  if (now) {
    std::string still = now->current == was->current ? "still reports " : "reports ";
    return {attribute, Outcome::kIgnoredByDevice,
            "the device accepted the set but " + still + now->current + "; its driver ignored it"};
  }
  return {attribute, Outcome::kApplied, change};
}

void settle_all(ApplyReport& report, const DesiredConfig& desired, const Plan& before,
                const Plan* after, const std::optional<KnobReport>& knob_report) {
  for (const auto& u : before.unavailable) {
    std::string_view part = part_of(u);
    std::string why = u.size() > part.size() + 2 ? u.substr(part.size() + 2) : u;
    report.attributes.push_back({std::string(part), Outcome::kNotAvailable, why});
  }
  for (const auto& attribute : attributes_named_by(desired)) {
    if (covered_by_unavailable(before, attribute)) continue;
    report.attributes.push_back(settle(report, attribute, before, after, knob_report));
  }
}

std::string_view outcome_label(Outcome outcome) {
  switch (outcome) {
  case Outcome::kApplied: return "applied";
  case Outcome::kUnchanged: return "unchanged";
  case Outcome::kIgnoredByDevice: return "ignored by device";
  case Outcome::kFailed: return "failed";
  case Outcome::kNotAvailable: return "not available";
  case Outcome::kUnverified: return "unverified";
  }
  return "unknown";
}

constexpr Outcome kAllOutcomes[] = {Outcome::kApplied,         Outcome::kUnchanged,
                                    Outcome::kIgnoredByDevice, Outcome::kFailed,
                                    Outcome::kNotAvailable,    Outcome::kUnverified};

} // namespace

HostState desired_host_state(const DesiredConfig& desired) {
  HostState wanted;
  wanted.ecn_np = desired.ecn_np;
  wanted.ecn_rp = desired.ecn_rp;
  wanted.cm_default_tos = desired.cm_default_tos;
  wanted.cm_default_roce_mode = desired.cm_default_roce_mode;
  wanted.rdma_traffic_class = desired.rdma_traffic_class;
  wanted.rdma_device = desired.rdma_device.value_or("");
  return wanted;
}

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
  case Outcome::kApplied: return "applied";
  case Outcome::kUnchanged: return "unchanged";
  case Outcome::kIgnoredByDevice: return "ignored_by_device";
  case Outcome::kFailed: return "failed";
  case Outcome::kNotAvailable: return "not_available";
  case Outcome::kUnverified: return "unverified";
  }
  return "unknown";
}

bool ApplyReport::fully_applied() const {
  if (dcb_write_error || host_error || readback_error) return false;
  for (const auto& a : attributes) {
    if (a.outcome != Outcome::kApplied && a.outcome != Outcome::kUnchanged) return false;
  }
  return true;
}

int ApplyReport::count(Outcome outcome) const {
  int n = 0;
  for (const auto& a : attributes)
    n += a.outcome == outcome;
  return n;
}

const AttributeOutcome* ApplyReport::find(std::string_view attribute) const {
  for (const auto& a : attributes) {
    if (a.attribute == attribute) return &a;
  }
  return nullptr;
}

Result<Plan> verify_profile(DcbDevice& device, HostKnobs& knobs, const std::string& dev,
                            const DesiredConfig& desired) {
  return read_and_plan(device, knobs, dev, desired);
}

Result<ApplyReport> apply_profile(DcbDevice& device, HostKnobs& knobs, const std::string& dev,
                                  const DesiredConfig& desired) {
  FABRIC_ASSIGN_OR_RETURN(Plan before, read_and_plan(device, knobs, dev, desired));
  ApplyReport report;
  report.dev = dev;
  if (before.in_sync()) {
    report.was_in_sync = true;
    settle_all(report, desired, before, &before, std::nullopt);
    return report;
  }

  // One IEEE set (plus the APP deletes): the kernel applies it as a unit per op.
  if (!before.change.empty()) {
    report.dcb_write_attempted = true;
    auto written = device.write(dev, before.change);
    if (!written.ok()) report.dcb_write_error = std::move(written).error();
  }
  // The host knobs do not depend on DCB, so they are set even when the DCB write failed;
  // the report says which were.
  std::optional<KnobReport> knob_report;
  if (before.host_change.has_any()) {
    auto knobs_set = knobs.apply(dev, desired.rdma_device, desired_host_state(desired));
    if (knobs_set.ok()) {
      knob_report = std::move(*knobs_set);
    } else {
      report.host_error = std::move(knobs_set).error();
    }
  }

  auto after = read_and_plan(device, knobs, dev, desired);
  if (!after.ok()) report.readback_error = std::move(after).error();
  settle_all(report, desired, before, after.ok() ? &*after : nullptr, knob_report);
  return report;
}

Result<void> require_in_sync(const Plan& plan) {
  if (!plan.differences.empty()) {
    std::vector<std::string> names;
    for (const auto& d : plan.differences)
      names.push_back(d.attribute);
    std::string detail = plural(names.size(), "attribute", "attributes") +
                         " drifted from the profile (" + join(names, ", ") + ")";
    if (!plan.unavailable.empty()) {
      detail += "; " + plural(plan.unavailable.size(), "part is", "parts are") + " not available";
    }
    return Error(ErrorCode::kBelowThreshold, plan.dev, detail)
        .with_hint("`fabric-pfc plan` shows the values; `fabric-pfc apply` sets them");
  }
  if (!plan.unavailable.empty()) {
    return Error(ErrorCode::kUnsupported, plan.dev,
                 plural(plan.unavailable.size(), "part", "parts") +
                     " of the profile not available: " + join(plan.unavailable, "; "));
  }
  return Ok();
}

Result<void> require_fully_applied(const ApplyReport& report) {
  if (report.fully_applied()) return Ok();
  if (report.dcb_write_error) {
    return Error(*report.dcb_write_error).with_context("the DCB change was not applied");
  }
  std::vector<std::string> names;
  bool failed = report.host_error || report.readback_error;
  for (const auto& a : report.attributes) {
    if (a.outcome == Outcome::kApplied || a.outcome == Outcome::kUnchanged) continue;
    names.push_back(a.attribute);
    failed |= a.outcome == Outcome::kFailed || a.outcome == Outcome::kUnverified;
  }
  std::string detail = plural(names.size(), "attribute was", "attributes were") + " not applied (" +
                       join(names, ", ") + ")";
  if (report.host_error) detail += "; " + report.host_error->message();
  if (report.readback_error) detail += "; read-back: " + report.readback_error->message();
  return Error(failed ? ErrorCode::kSystem : ErrorCode::kUnsupported, report.dev, detail);
}

std::string render_apply_text(const ApplyReport& report) {
  std::string out = report.dev + ": ";
  if (report.was_in_sync) {
    out += "in sync with the profile; nothing written\n";
  } else {
    std::vector<std::string> counts;
    for (Outcome o : kAllOutcomes) {
      if (int n = report.count(o))
        counts.push_back(std::string(outcome_label(o)) + " " + std::to_string(n));
    }
    out += report.fully_applied() ? "profile applied" : "profile NOT fully applied";
    out += " (" + join(counts, ", ") + ")\n";
  }
  if (report.dcb_write_error) {
    int dcb_applied = 0;
    for (const auto& a : report.attributes)
      dcb_applied += a.outcome == Outcome::kApplied && !is_host_knob(a.attribute);
    out += dcb_applied == 0 && !report.readback_error
               ? "  the DCB change failed and none of it was applied: "
               : "  the DCB change failed part-way (see below for what got through): ";
    out += report.dcb_write_error->message() + "\n";
    if (!report.dcb_write_error->hint().empty()) {
      out += "  hint: " + report.dcb_write_error->hint() + "\n";
    }
  }
  if (report.host_error) {
    out += "  the host knobs were not set: " + report.host_error->message() + "\n";
  }
  if (report.readback_error) {
    out += "  reading back failed, so what was written is unverified: " +
           report.readback_error->message() + "\n";
  }
  for (const auto& a : report.attributes) {
    std::string label(outcome_label(a.outcome));
    label.resize(std::max<size_t>(label.size(), 18), ' ');
    out += "  " + label + a.attribute + (a.detail.empty() ? "" : ": " + a.detail) + "\n";
  }
  return out;
}

std::string render_apply_json(const ApplyReport& report, bool pretty) {
  auto message = [](const std::optional<Error>& e) {
    return e ? std::optional<std::string>(e->message()) : std::nullopt;
  };
  json::Writer w(pretty);
  w.begin_object()
      .field("schema_version", json::kSchemaVersion)
      .field("device", report.dev)
      .field("was_in_sync", report.was_in_sync)
      .field("fully_applied", report.fully_applied());
  w.key("dcb_write")
      .begin_object()
      .field("attempted", report.dcb_write_attempted)
      .field("error", message(report.dcb_write_error))
      .end_object();
  w.field("host_error", message(report.host_error))
      .field("readback_error", message(report.readback_error));
  w.key("attributes").begin_array();
  for (const auto& a : report.attributes) {
    w.begin_object()
        .field("attribute", a.attribute)
        .field("outcome", outcome_name(a.outcome))
        .field("detail", a.detail)
        .end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

} // namespace fabric::pfc
