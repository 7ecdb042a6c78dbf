#include "nccltest/watchdog.h"

#include <algorithm>
#include <cstdio>

namespace fabric::nccltest {
namespace {

double seconds_between(WatchdogClock::time_point a, WatchdogClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string one_decimal(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", s);
  return text;
}

std::string rank_name(int rank, const RankLabel* label) {
  std::string out = "rank " + std::to_string(rank);
  if (label != nullptr) out += " (" + label->host + ", " + label->device + ")";
  return out;
}

} // namespace

std::string describe_beat(const Beat& beat) {
  if (beat.collective.empty()) return beat.what;
  return beat.collective + " " + std::to_string(beat.bytes) + " B " +
         (beat.in_place ? "in-place " : "out-of-place ") + beat.what;
}

ProgressBoard::ProgressBoard(int nranks, std::chrono::nanoseconds timeout,
                             WatchdogClock::time_point start)
    : timeout_(timeout), slots_(static_cast<std::size_t>(nranks)) {
  for (Slot& s : slots_)
    s.since = start;
}

void ProgressBoard::set_label(int rank, RankLabel label) {
  std::lock_guard lock(mutex_);
  if (rank >= 0 && rank < static_cast<int>(slots_.size())) slots_[rank].label = std::move(label);
}

void ProgressBoard::connected(int rank, WatchdogClock::time_point now) {
  std::lock_guard lock(mutex_);
  if (rank < 0 || rank >= static_cast<int>(slots_.size())) return;
  slots_[rank].connected = true;
  slots_[rank].since = now;
}

void ProgressBoard::beat(int rank, const Beat& beat, WatchdogClock::time_point now) {
  std::lock_guard lock(mutex_);
  if (rank < 0 || rank >= static_cast<int>(slots_.size())) return;
  Slot& s = slots_[rank];
  s.connected = true;
  s.last = beat;
  s.since = now;
}

void ProgressBoard::lost(int rank, WatchdogClock::time_point now) {
  std::lock_guard lock(mutex_);
  if (rank < 0 || rank >= static_cast<int>(slots_.size())) return;
  if (slots_[rank].finished) return;
  slots_[rank].lost = true;
  slots_[rank].since = now;
}

void ProgressBoard::finished(int rank, WatchdogClock::time_point now) {
  std::lock_guard lock(mutex_);
  if (rank < 0 || rank >= static_cast<int>(slots_.size())) return;
  slots_[rank].finished = true;
  slots_[rank].since = now;
}

bool ProgressBoard::all_finished() const {
  std::lock_guard lock(mutex_);
  return std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.finished; });
}

std::optional<HangReport> ProgressBoard::check(WatchdogClock::time_point now) const {
  std::lock_guard lock(mutex_);
  for (std::size_t r = 0; r < slots_.size(); ++r) {
    const Slot& s = slots_[r];
    if (s.finished) continue;
    if (s.lost) return report(now, "lost");
    if (now - s.since > timeout_) return report(now, "timeout");
  }
  return std::nullopt;
}

HangReport ProgressBoard::report(WatchdogClock::time_point now, const std::string& trigger) const {
  HangReport out;
  out.timeout_s = std::chrono::duration<double>(timeout_).count();
  // How far each unfinished rank got: entering phase p counts 2p, leaving it 2p + 1.
  auto progress = [](const Slot& s) -> int64_t {
    if (!s.last) return s.connected ? 0 : -1;
    return static_cast<int64_t>(2 * s.last->phase + (s.last->finished ? 1 : 0));
  };
  int64_t furthest = -1, least = INT64_MAX;
  for (const Slot& s : slots_) {
    furthest = std::max(furthest, progress(s));
    if (!s.finished) least = std::min(least, progress(s));
  }
  std::vector<int> lost;
  for (std::size_t r = 0; r < slots_.size(); ++r) {
    const Slot& s = slots_[r];
    if (s.finished) continue;
    RankStatus status;
    status.rank = static_cast<int>(r);
    if (s.label) status.label = *s.label;
    status.seconds = seconds_between(s.since, now);
    status.behind = progress(s) < furthest && progress(s) == least;
    std::string ago = one_decimal(status.seconds) + " s";
    if (s.lost) {
      status.state = "lost its control connection " + ago + " ago (process died?)" +
                     (s.last ? ", last in " + describe_beat(*s.last) : "");
      lost.push_back(status.rank);
    } else if (!s.connected) {
      status.state = "never reported (" + ago + " since the start)";
    } else if (!s.last) {
      status.state = "connected, no progress for " + ago;
    } else if (!s.last->finished) {
      status.state = "in " + describe_beat(*s.last) + " for " + ago;
    } else {
      status.state = "finished " + describe_beat(*s.last) + " " + ago +
                     " ago and has not started the next phase";
    }
    if (status.behind) out.behind.push_back(status.rank);
    out.waiting.push_back(std::move(status));
  }
  auto names = [&](const std::vector<int>& ranks) {
    std::string text;
    for (int r : ranks) {
      const Slot& s = slots_[r];
      text += (text.empty() ? "" : ", ") + rank_name(r, s.label ? &*s.label : nullptr);
    }
    return text;
  };
  if (trigger == "lost" && !lost.empty()) {
    out.cause = names(lost) + (lost.size() == 1 ? " is" : " are") +
                " gone: the others cannot finish without " + (lost.size() == 1 ? "it" : "them");
  } else if (!out.behind.empty()) {
    out.cause = names(out.behind) + (out.behind.size() == 1 ? " is" : " are") +
                " behind every other rank: look there first";
  } else {
    out.cause = "every unfinished rank is at the same point: the collective itself made no "
                "progress (network or transport hang)";
  }
  return out;
}

std::string render_hang_report(const HangReport& report) {
  std::string out = "# Watchdog: no progress within " + one_decimal(report.timeout_s) +
                    " s (-T); aborting the run. Ranks that had not finished:\n";
  for (const RankStatus& s : report.waiting) {
    std::string who = "rank " + std::to_string(s.rank);
    if (!s.label.host.empty()) who += " (" + s.label.host + ", " + s.label.device + ")";
    out += "#   " + who + ": " + s.state + (s.behind ? "  <- behind" : "") + "\n";
  }
  out += "# Watchdog: " + report.cause + "\n";
  return out;
}

} // namespace fabric::nccltest
