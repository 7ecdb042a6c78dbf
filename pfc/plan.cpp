#include "pfc/plan.h"

#include <algorithm>
#include <tuple>

#include "common/json.h"
#include "libs/dcb/dcb_format.h"

namespace fabric::pfc {
namespace {

std::string on_off(uint8_t v) {
  return v ? "on" : "off";
}

// dcb prints rates in bits; the kernel's ieee_maxrate is in kbit/s. Exact units only,
// so that two different rates never render the same.
std::string rate(uint64_t kbit) {
  if (kbit == 0) return "unlimited";
  if (kbit % 1000000 == 0) return std::to_string(kbit / 1000000) + "Gbit";
  if (kbit % 1000 == 0) return std::to_string(kbit / 1000) + "Mbit";
  return std::to_string(kbit) + "kbit";
}

std::string rates(const PerTc<uint64_t>& tc_maxrate) {
  std::string out;
  for (int tc = 0; tc < kTrafficClasses; ++tc) {
    out += (tc ? " " : "") + std::to_string(tc) + ":" + rate(tc_maxrate[tc]);
  }
  return out;
}

// The APP entries of one selector, by protocol ("26:3 48:6"), or "none".
std::string app_list(std::vector<AppEntry> apps, uint8_t selector) {
  std::sort(apps.begin(), apps.end(), [](const AppEntry& a, const AppEntry& b) {
    return std::tie(a.protocol, a.priority) < std::tie(b.protocol, b.priority);
  });
  std::string out = format::app_entries(apps, selector);
  return out.empty() ? "none" : out;
}

std::string app_attribute(uint8_t selector) {
  return "app." + std::string(format::selector_key(selector));
}

bool contains(const std::vector<AppEntry>& apps, const AppEntry& app) {
  return std::find(apps.begin(), apps.end(), app) != apps.end();
}

// Records a difference when the profile names a field and the device has another value,
// and puts the desired value into `field`, a field of the struct that will be sent.
template <typename T, typename Render>
bool want(Plan& plan, const char* attribute, T& field, const std::optional<T>& desired,
          Render render) {
  if (!desired || field == *desired) return false;
  plan.differences.push_back({attribute, render(field), render(*desired)});
  field = *desired;
  return true;
}

// The same for a host knob, which may be missing on this host.
template <typename T, typename Render>
void want_knob(Plan& plan, std::string_view attribute, const std::optional<T>& have,
               const std::optional<T>& desired, std::optional<T>& change, Render render,
               const HostState& host) {
  if (!desired) return;
  if (!have) {
    plan.unavailable.push_back(std::string(attribute) + ": " +
                               knob_unavailable_reason(attribute, plan.dev, host));
    return;
  }
  if (*have == *desired) return;
  plan.differences.push_back({std::string(attribute), render(*have), render(*desired)});
  change = desired;
}

// Values no device could take. The profile parser checks these too; make_plan is a
// library entry point and must not send the kernel nonsense from another caller.
Result<void> validate(const DesiredConfig& d) {
  auto invalid = [](const char* attribute, std::string detail) {
    return Error(ErrorCode::kInvalidConfig, attribute, std::move(detail));
  };
  for (int p = 0; d.prio_tc && p < kPriorities; ++p) {
    if ((*d.prio_tc)[p] >= kTrafficClasses) {
      return invalid("ets.prio_tc", "priority " + std::to_string(p) + " maps to traffic class " +
                                        std::to_string((*d.prio_tc)[p]) +
                                        "; traffic classes are 0-7");
    }
  }
  for (int tc = 0; d.tc_tsa && tc < kTrafficClasses; ++tc) {
    if (format::tsa_name((*d.tc_tsa)[tc]) == "unknown") {
      return invalid("ets.tc_tsa", "traffic class " + std::to_string(tc) +
                                       " has an unknown algorithm " +
                                       std::to_string((*d.tc_tsa)[tc]));
    }
  }
  for (int tc = 0; d.tc_bw && tc < kTrafficClasses; ++tc) {
    if ((*d.tc_bw)[tc] > 100) {
      return invalid("ets.tc_bw", "traffic class " + std::to_string(tc) + " has " +
                                      std::to_string((*d.tc_bw)[tc]) + "%");
    }
  }
  for (int p = 0; d.prio2buffer && p < kPriorities; ++p) {
    if ((*d.prio2buffer)[p] >= 8) {
      return invalid("buffer.prio_buffer", "priority " + std::to_string(p) + " maps to buffer " +
                                               std::to_string((*d.prio2buffer)[p]) +
                                               "; buffers are 0-7");
    }
  }
  for (const auto& app : d.apps) {
    std::string entry = std::to_string(app.protocol) + ":" + std::to_string(app.priority);
    if (app.selector < 1 || app.selector > 5) {
      return invalid("app",
                     "entry " + entry + " has an unknown selector " + std::to_string(app.selector));
    }
    if (app.priority >= kPriorities) {
      return invalid("app", "entry " + entry + ": priorities are 0-7");
    }
    if (app.selector == static_cast<uint8_t>(AppSelector::kDscp) && app.protocol > 63) {
      return invalid("app.dscp_prio", "entry " + entry + ": DSCP values are 0-63");
    }
  }
  return Ok();
}

void plan_pfc(Plan& plan, const DcbState& current, const DesiredConfig& d) {
  if (!d.pfc_en && !d.pfc_delay) return;
  if (!current.pfc) {
    plan.unavailable.push_back("pfc: the device does not report PFC (its driver has no IEEE "
                               "PFC support)");
    return;
  }
  PfcConfig next = *current.pfc;
  bool changed = want(plan, "pfc.prio_pfc", next.pfc_en, d.pfc_en, format::prio_bits);
  changed |= want(plan, "pfc.delay", next.delay, d.pfc_delay,
                  [](uint16_t v) { return std::to_string(v); });
  if (changed) plan.change.pfc = next;
}

void plan_ets(Plan& plan, const DcbState& current, const DesiredConfig& d) {
  if (!d.ets_willing && !d.prio_tc && !d.tc_bw && !d.tc_tsa) return;
  if (!current.ets) {
    plan.unavailable.push_back("ets: the device does not report ETS (its driver has no IEEE "
                               "ETS support)");
    return;
  }
  EtsConfig next = *current.ets;
  std::optional<uint8_t> willing;
  if (d.ets_willing) willing = *d.ets_willing ? 1 : 0;
  auto indexed = [](const auto& a) { return format::indexed(a); };
  bool changed = want(plan, "ets.willing", next.willing, willing, on_off);
  changed |= want(plan, "ets.prio_tc", next.prio_tc, d.prio_tc, indexed);
  changed |= want(plan, "ets.tc_bw", next.tc_tx_bw, d.tc_bw, indexed);
  changed |= want(plan, "ets.tc_tsa", next.tc_tsa, d.tc_tsa, format::tsa_list);
  if (changed) plan.change.ets = next;
}

// The kernel keeps a list of APP entries and may hold several for one protocol. Missing
// entries are added; with apps_exclusive, entries of the profile's selectors that the
// profile does not list are deleted, so a stale "26:0" cannot shadow "26:3".
void plan_apps(Plan& plan, const DcbState& current, const DesiredConfig& d) {
  if (d.apps.empty()) return;
  std::vector<uint8_t> selectors = format::selectors_in(d.apps);
  std::vector<AppEntry> after = current.apps;
  if (d.apps_exclusive) {
    for (const auto& app : current.apps) {
      bool listed_selector =
          std::find(selectors.begin(), selectors.end(), app.selector) != selectors.end();
      if (listed_selector && !contains(d.apps, app)) {
        plan.change.app_del.push_back(app);
        after.erase(std::find(after.begin(), after.end(), app));
      }
    }
  }
  for (const auto& app : d.apps) {
    if (contains(after, app)) continue;
    plan.change.app_add.push_back(app);
    after.push_back(app);
  }
  for (uint8_t selector : selectors) {
    std::string have = app_list(current.apps, selector);
    std::string will = app_list(after, selector);
    if (have != will) plan.differences.push_back({app_attribute(selector), have, will});
  }
}

void plan_buffer_and_maxrate(Plan& plan, const DcbState& current, const DesiredConfig& d) {
  auto indexed = [](const auto& a) { return format::indexed(a); };
  if (d.prio2buffer || d.buffer_size) {
    if (!current.buffer) {
      plan.unavailable.push_back("buffer: the device does not report port buffers (its "
                                 "driver has no DCB buffer support)");
    } else {
      BufferConfig next = *current.buffer;
      bool changed = want(plan, "buffer.prio_buffer", next.prio2buffer, d.prio2buffer, indexed);
      changed |= want(plan, "buffer.buffer_size", next.buffer_size, d.buffer_size, indexed);
      if (changed) plan.change.buffer = next;
    }
  }
  if (d.tc_maxrate) {
    if (!current.maxrate) {
      plan.unavailable.push_back("maxrate: the device does not report per-TC rate limits (its "
                                 "driver has no IEEE maxrate support)");
    } else {
      MaxRate next = *current.maxrate;
      if (want(plan, "maxrate.tc_maxrate", next.tc_maxrate, d.tc_maxrate, rates)) {
        plan.change.maxrate = next;
      }
    }
  }
}

void plan_host(Plan& plan, const HostState& host, const DesiredConfig& d) {
  HostState& change = plan.host_change;
  change.rdma_device = host.rdma_device;
  change.rdma_port = host.rdma_port;
  auto number = [](uint8_t v) { return std::to_string(v); };
  auto text = [](const std::string& s) { return s; };
  const HostState& rdma = host;
  want_knob(plan, "ecn.roce_np", host.ecn_np, d.ecn_np, change.ecn_np, format::prio_bits, rdma);
  want_knob(plan, "ecn.roce_rp", host.ecn_rp, d.ecn_rp, change.ecn_rp, format::prio_bits, rdma);
  want_knob(plan, "rdma.cm_default_tos", host.cm_default_tos, d.cm_default_tos,
            change.cm_default_tos, number, rdma);
  want_knob(plan, "rdma.cm_default_roce_mode", host.cm_default_roce_mode, d.cm_default_roce_mode,
            change.cm_default_roce_mode, text, rdma);
  want_knob(plan, "rdma.traffic_class", host.rdma_traffic_class, d.rdma_traffic_class,
            change.rdma_traffic_class, number, rdma);
}

} // namespace

const Difference* Plan::find(std::string_view attribute) const {
  for (const auto& d : differences) {
    if (d.attribute == attribute) return &d;
  }
  return nullptr;
}

std::vector<std::string> attributes_named_by(const DesiredConfig& d) {
  std::vector<std::string> out;
  auto add = [&](bool named, std::string attribute) {
    if (named) out.push_back(std::move(attribute));
  };
  add(d.pfc_en.has_value(), "pfc.prio_pfc");
  add(d.pfc_delay.has_value(), "pfc.delay");
  add(d.ets_willing.has_value(), "ets.willing");
  add(d.prio_tc.has_value(), "ets.prio_tc");
  add(d.tc_bw.has_value(), "ets.tc_bw");
  add(d.tc_tsa.has_value(), "ets.tc_tsa");
  for (uint8_t selector : format::selectors_in(d.apps))
    out.push_back(app_attribute(selector));
  add(d.prio2buffer.has_value(), "buffer.prio_buffer");
  add(d.buffer_size.has_value(), "buffer.buffer_size");
  add(d.tc_maxrate.has_value(), "maxrate.tc_maxrate");
  add(d.ecn_np.has_value(), "ecn.roce_np");
  add(d.ecn_rp.has_value(), "ecn.roce_rp");
  add(d.cm_default_tos.has_value(), "rdma.cm_default_tos");
  add(d.cm_default_roce_mode.has_value(), "rdma.cm_default_roce_mode");
  add(d.rdma_traffic_class.has_value(), "rdma.traffic_class");
  return out;
}

std::vector<DesiredValue> desired_values(const DesiredConfig& d) {
  std::vector<DesiredValue> out;
  auto indexed = [](const auto& a) { return format::indexed(a); };
  auto number = [](auto v) { return std::to_string(v); };
  auto add = [&out](const char* attribute, const auto& field, auto render) {
    if (field) out.push_back({attribute, render(*field)});
  };
  add("pfc.prio_pfc", d.pfc_en, format::prio_bits);
  add("pfc.delay", d.pfc_delay, number);
  add("ets.willing", d.ets_willing, [](bool v) { return on_off(v ? 1 : 0); });
  add("ets.prio_tc", d.prio_tc, indexed);
  add("ets.tc_bw", d.tc_bw, indexed);
  add("ets.tc_tsa", d.tc_tsa, format::tsa_list);
  for (uint8_t selector : format::selectors_in(d.apps))
    out.push_back({app_attribute(selector), app_list(d.apps, selector)});
  add("buffer.prio_buffer", d.prio2buffer, indexed);
  add("buffer.buffer_size", d.buffer_size, indexed);
  add("maxrate.tc_maxrate", d.tc_maxrate, rates);
  add("ecn.roce_np", d.ecn_np, format::prio_bits);
  add("ecn.roce_rp", d.ecn_rp, format::prio_bits);
  add("rdma.cm_default_tos", d.cm_default_tos, number);
  add("rdma.cm_default_roce_mode", d.cm_default_roce_mode, [](const std::string& v) { return v; });
  add("rdma.traffic_class", d.rdma_traffic_class, number);
  return out;
}

Result<Plan> make_plan(const std::string& dev, const DcbState& current, const HostState& host,
                       const DesiredConfig& desired) {
  FABRIC_TRY(validate(desired));
  Plan plan;
  plan.dev = dev;
  plan_pfc(plan, current, desired);
  plan_ets(plan, current, desired);
  plan_apps(plan, current, desired);
  plan_buffer_and_maxrate(plan, current, desired);
  plan_host(plan, host, desired);
  return plan;
}

std::string render_plan_text(const Plan& plan) {
  std::string out = plan.dev + ": ";
  size_t n = plan.differences.size();
  out += plan.in_sync() ? "in sync" : std::to_string(n) + (n == 1 ? " difference" : " differences");
  out += "\n";
  for (const auto& d : plan.differences) {
    out += "  " + d.attribute + ": " + d.current + " -> " + d.desired + "\n";
  }
  for (const auto& u : plan.unavailable)
    out += "  not available: " + u + "\n";
  return out;
}

std::string render_plan_json(const Plan& plan, bool pretty) {
  json::Writer w(pretty);
  w.begin_object()
      .field("schema_version", json::kSchemaVersion)
      .field("device", plan.dev)
      .field("in_sync", plan.in_sync());
  w.key("differences").begin_array();
  for (const auto& d : plan.differences) {
    w.begin_object()
        .field("attribute", d.attribute)
        .field("current", d.current)
        .field("desired", d.desired)
        .end_object();
  }
  w.end_array();
  w.key("unavailable").begin_array();
  for (const auto& u : plan.unavailable)
    w.value(u);
  w.end_array();
  w.end_object();
  return w.str();
}

} // namespace fabric::pfc
