#include "exporters/dcb_collector.h"

#include "exporters/dcb_summary.h"
#include "exporters/pfc_collector.h"
#include "libs/dcb/dcb_format.h"

namespace fabric::exporters {
namespace {

constexpr uint8_t kDscpSelector = static_cast<uint8_t>(pfc::AppSelector::kDscp);

void add_state(MetricSink& sink, const std::string& netdev, const pfc::DcbState& state) {
  if (state.pfc) {
    auto enabled = sink.gauge("fabric_dcb_pfc_enabled",
                              "1 when PFC is enabled on the priority (it is lossless), else 0.");
    for (int p = 0; p < pfc::kPriorities; ++p) {
      enabled.add({{"netdev", netdev}, {"priority", std::to_string(p)}},
                  (state.pfc->pfc_en >> p) & 1);
    }
  }
  if (state.ets) {
    auto tc = sink.gauge("fabric_dcb_priority_traffic_class",
                         "The traffic class (0-7) that ETS maps the priority to.");
    for (int p = 0; p < pfc::kPriorities; ++p)
      tc.add({{"netdev", netdev}, {"priority", std::to_string(p)}}, state.ets->prio_tc[p]);
    auto share = sink.gauge("fabric_dcb_ets_bandwidth_ratio",
                            "Transmit bandwidth share of the traffic class (0-1), with its "
                            "transmission selection algorithm.");
    for (int t = 0; t < pfc::kTrafficClasses; ++t) {
      share.add({{"netdev", netdev},
                 {"tc", std::to_string(t)},
                 {"tsa", std::string(pfc::format::tsa_name(state.ets->tc_tsa[t]))}},
                state.ets->tc_tx_bw[t] / 100.0);
    }
  }
  auto dscp = sink.gauge("fabric_dcb_dscp_priority",
                         "The priority a DSCP value maps to in the APP table (DSCP entries mean "
                         "the port trusts DSCP on mlx5).");
  int last = -1;
  for (const auto& app : state.apps) { // sorted: the first entry of a DSCP wins
    if (app.selector != kDscpSelector || app.protocol == last) continue;
    last = app.protocol;
    dscp.add({{"netdev", netdev}, {"dscp", std::to_string(app.protocol)}}, app.priority);
  }
  auto entries = sink.gauge("fabric_dcb_app_entries", "Entries in the DCB APP table, by selector.");
  for (uint8_t selector : pfc::format::selectors_in(state.apps)) {
    std::size_t n = 0;
    for (const auto& app : state.apps)
      n += app.selector == selector;
    std::string key(pfc::format::selector_key(selector)); // dscp_prio, ethtype_prio, ...
    key = key.substr(0, key.rfind("_prio"));
    entries.add({{"netdev", netdev}, {"selector", key}}, static_cast<double>(n));
  }
  sink.gauge("fabric_dcb_config_info",
             "The DCB configuration's hash (PFC, ETS, APP, buffers, max rates, DCBX mode; not "
             "counters or the peer's): `count by (hash)` finds the node configured otherwise.")
      .add({{"netdev", netdev}, {"hash", dcb_config_hash(state)}}, 1);
}

} // namespace

Result<void> DcbCollector::collect(MetricSink& sink) {
  FABRIC_ASSIGN_OR_RETURN(auto netdevs, select_netdevs(sysfs_, netdevs_));
  auto supported = sink.gauge("fabric_dcb_supported",
                              "1 when the netdev's driver answers DCB netlink, 0 when it has no "
                              "DCB support (veth, virtio_net, NICs without dcbnl).");
  for (const auto& netdev : netdevs) {
    auto state = dcb_->read(netdev);
    if (!state.ok()) {
      if (state.error().code() == ErrorCode::kUnsupported) {
        supported.add({{"netdev", netdev}}, 0);
      } else {
        sink.error(state.error().message());
      }
      continue;
    }
    supported.add({{"netdev", netdev}}, 1);
    add_state(sink, netdev, *state);
  }
  return Ok();
}

} // namespace fabric::exporters
