#include "exporters/pfc_collector.h"

#include "exporters/pause_stat_names.h"

namespace fabric::exporters {

Result<std::vector<std::string>> select_netdevs(const SysfsReader& sysfs,
                                                const std::vector<std::string>& configured) {
  if (!configured.empty()) return configured;
  FABRIC_ASSIGN_OR_RETURN(auto names, sysfs.list("class/net"));
  std::vector<std::string> out;
  for (auto& name : names) {
    if (sysfs.exists("class/net/" + name + "/device")) out.push_back(std::move(name));
  }
  return out;
}

PfcCollector::PfcCollector(SysfsReader sysfs, std::vector<std::string> netdevs,
                           EthtoolSource ethtool, std::unique_ptr<pfc::DcbDevice> dcb)
    : sysfs_(std::move(sysfs)), netdevs_(std::move(netdevs)), ethtool_(std::move(ethtool)),
      dcb_(std::move(dcb)) {}

Result<void> PfcCollector::collect(MetricSink& sink) {
  FABRIC_ASSIGN_OR_RETURN(auto netdevs, select_netdevs(sysfs_, netdevs_));
  for (const auto& netdev : netdevs) {
    collect_ethtool(sink, netdev);
    if (dcb_) collect_dcb(sink, netdev);
  }
  return Ok();
}

void PfcCollector::collect_ethtool(MetricSink& sink, const std::string& netdev) {
  auto stats = ethtool_(netdev);
  if (!stats.ok()) {
    // A driver without statistics has no pause counters to report; anything else (the
    // netdev is gone, the ioctl failed) is an error.
    if (stats.error().code() != ErrorCode::kUnsupported) sink.error(stats.error().message());
    return;
  }
  for (const auto& stat : *stats) {
    auto pause = classify_pause_stat(stat.name);
    if (!pause) continue;
    const double value = static_cast<double>(stat.value) * pause->scale;
    using Kind = PauseStat::Kind;
    if (pause->kind == Kind::kStormWarning || pause->kind == Kind::kStormError) {
      sink.counter("fabric_pfc_pause_storm_events_total",
                   "Pause storm events: the NIC kept sending pause frames past the warning or "
                   "error threshold of its storm watchdog (mlx5).")
          .add({{"netdev", netdev},
                {"level", pause->kind == Kind::kStormWarning ? "warning" : "error"}},
               value);
      continue;
    }
    Labels labels{{"netdev", netdev},
                  {"priority", std::to_string(pause->priority)},
                  {"direction", std::string(pause->direction)}};
    switch (pause->kind) {
    case Kind::kFrames:
      sink.counter("fabric_pfc_pause_frames_total",
                   "PFC pause (XOFF) frames per priority, received (rx) and sent (tx), from the "
                   "driver's ethtool statistics.")
          .add(std::move(labels), value);
      break;
    case Kind::kDuration:
      sink.counter("fabric_pfc_pause_duration_seconds_total",
                   "Time paused per priority: rx, the port held back by the peer; tx, the port "
                   "holding the peer back.")
          .add(std::move(labels), value);
      break;
    default:
      sink.counter("fabric_pfc_pause_transitions_total",
                   "Transitions from not paused to paused, per priority.")
          .add(std::move(labels), value);
      break;
    }
  }
}

void PfcCollector::collect_dcb(MetricSink& sink, const std::string& netdev) {
  auto state = dcb_->read(netdev);
  if (!state.ok()) {
    // No DCB on this netdev (veth, virtio): the dcb collector says so; not an error here.
    if (state.error().code() != ErrorCode::kUnsupported) sink.error(state.error().message());
    return;
  }
  if (!state->pfc) return;
  auto requests = sink.counter("fabric_pfc_requests_total",
                               "PFC frames sent per priority, as the driver reports them over "
                               "DCB netlink (ieee_pfc.requests).");
  auto indications = sink.counter("fabric_pfc_indications_total",
                                  "PFC frames received per priority, as the driver reports them "
                                  "over DCB netlink (ieee_pfc.indications).");
  for (int p = 0; p < pfc::kPriorities; ++p) {
    Labels labels{{"netdev", netdev}, {"priority", std::to_string(p)}};
    requests.add(labels, static_cast<double>(state->pfc->requests[p]));
    indications.add(std::move(labels), static_cast<double>(state->pfc->indications[p]));
  }
}

} // namespace fabric::exporters
