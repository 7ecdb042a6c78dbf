// Ethernet PFC statistics under their drivers' names (`ethtool -S`), mapped to one meaning:
//
//   mlx5      rx_prio3_pause, tx_prio3_pause, rx_prio3_pause_duration (us),
//             rx_prio3_pause_transition, tx_pause_storm_warning_events, ..._error_events
//   ice       rx_priority_3_xoff.nic, tx_priority_3_xoff.nic
//   i40e      port.rx_priority_3_xoff_rx, port.tx_priority_3_xoff_tx,
//             port.rx_priority_3_xon_2_xoff
//   bnxt_en   rx_pfc_ena_frames_pri3, tx_pfc_ena_frames_pri3, pfc_pri3_rx_duration_us,
//             pfc_pri3_rx_transitions
//
// Intel counts XOFF (pause) and XON (resume) frames apart; the XOFF ones are the pause
// frames. Names that match nothing here are not pause statistics and are ignored.
#pragma once

#include <optional>
#include <string_view>

namespace fabric::exporters {

struct PauseStat {
  enum class Kind { kFrames, kDuration, kTransitions, kStormWarning, kStormError };
  Kind kind;
  int priority = -1;          // 0-7; -1 for the storm events, which are per port
  std::string_view direction; // "rx" or "tx"; "" for the storm events
  double scale = 1;           // to base units: durations are in microseconds
};

std::optional<PauseStat> classify_pause_stat(std::string_view name);

} // namespace fabric::exporters
