#include "exporters/pause_stat_names.h"

namespace fabric::exporters {
namespace {

using Kind = PauseStat::Kind;

// "{p}" stands for the priority digit 0-7.
struct Pattern {
  std::string_view text;
  Kind kind;
  std::string_view direction;
  double scale = 1;
};

constexpr double kMicroseconds = 1e-6;

constexpr Pattern kPatterns[] = {
    // mlx5
    {"rx_prio{p}_pause", Kind::kFrames, "rx"},
    {"tx_prio{p}_pause", Kind::kFrames, "tx"},
    {"rx_prio{p}_pause_duration", Kind::kDuration, "rx", kMicroseconds},
    {"tx_prio{p}_pause_duration", Kind::kDuration, "tx", kMicroseconds},
    {"rx_prio{p}_pause_transition", Kind::kTransitions, "rx"},
    {"tx_pause_storm_warning_events", Kind::kStormWarning, ""},
    {"tx_pause_storm_error_events", Kind::kStormError, ""},
    // ice
    {"rx_priority_{p}_xoff.nic", Kind::kFrames, "rx"},
    {"tx_priority_{p}_xoff.nic", Kind::kFrames, "tx"},
    // i40e
    {"port.rx_priority_{p}_xoff_rx", Kind::kFrames, "rx"},
    {"port.tx_priority_{p}_xoff_tx", Kind::kFrames, "tx"},
    {"port.rx_priority_{p}_xon_2_xoff", Kind::kTransitions, "rx"},
    // bnxt_en
    {"rx_pfc_ena_frames_pri{p}", Kind::kFrames, "rx"},
    {"tx_pfc_ena_frames_pri{p}", Kind::kFrames, "tx"},
    {"pfc_pri{p}_rx_duration_us", Kind::kDuration, "rx", kMicroseconds},
    {"pfc_pri{p}_tx_duration_us", Kind::kDuration, "tx", kMicroseconds},
    {"pfc_pri{p}_rx_transitions", Kind::kTransitions, "rx"},
    {"pfc_pri{p}_tx_transitions", Kind::kTransitions, "tx"},
};

// The priority `name` has in the place of {p}, -1 for a pattern without one, or nullopt.
std::optional<int> match(std::string_view pattern, std::string_view name) {
  const std::size_t hole = pattern.find("{p}");
  if (hole == std::string_view::npos) {
    if (pattern == name) return -1;
    return std::nullopt;
  }
  const std::string_view prefix = pattern.substr(0, hole);
  const std::string_view suffix = pattern.substr(hole + 3);
  if (name.size() != prefix.size() + 1 + suffix.size()) return std::nullopt;
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
  const char digit = name[prefix.size()];
  if (digit < '0' || digit > '7') return std::nullopt;
  return digit - '0';
}

} // namespace

std::optional<PauseStat> classify_pause_stat(std::string_view name) {
  for (const Pattern& p : kPatterns) {
    if (auto priority = match(p.text, name))
      return PauseStat{p.kind, *priority, p.direction, p.scale};
  }
  return std::nullopt;
}

} // namespace fabric::exporters
