// The hang watchdog's bookkeeping: rank 0 keeps, for every rank, the last progress beat it
// received (which phase, collective and size the rank entered or finished, and when), and
// decides when the run must be aborted and whom to name.
//
// Every rank runs the same sequence of phases (setup, warm-up, then a timed loop and a
// check per size and placement), numbered identically everywhere, so "how far" a rank got
// compares across ranks: a rank behind all others is the one that stalled; when every rank
// waits inside the same collective, the collective itself (the network) hung.
//
// Pure logic with an injected clock; the control channel feeds it (control_channel.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fabric::nccltest {

using WatchdogClock = std::chrono::steady_clock;

// Exit status of a run the watchdog aborted (also mpirun's, through MPI_Abort).
inline constexpr int kExitHang = 5;

struct Beat {
  uint64_t phase = 0;     // the phase's number in the run's sequence, from 1
  bool finished = false;  // false: entered the phase; true: left it
  std::string what;       // "setup", "warm-up", "timed loop", "check", "pairs round 2"
  std::string collective; // "all_reduce"; "" outside collectives
  std::size_t bytes = 0;
  bool in_place = false;
};

// "all_reduce 1048576 B in-place timed loop", "setup".
std::string describe_beat(const Beat& beat);

struct RankLabel {
  std::string host;
  std::string device; // "device 0", "host memory"
};

struct RankStatus {
  int rank = 0;
  RankLabel label;
  std::string state;   // what the rank was doing, in words
  double seconds = 0;  // since its last beat (or since the start, when it never reported)
  bool behind = false; // behind the furthest rank
};

struct HangReport {
  double timeout_s = 0;
  std::string cause;               // one sentence: who to look at
  std::vector<RankStatus> waiting; // every rank that had not finished, by rank
  std::vector<int> behind;         // the ranks furthest behind, when not all are equal
};

class ProgressBoard {
public:
  ProgressBoard(int nranks, std::chrono::nanoseconds timeout, WatchdogClock::time_point start);

  // Labels for the report; ranks without one are named by number only.
  void set_label(int rank, RankLabel label);
  void connected(int rank, WatchdogClock::time_point now);
  void beat(int rank, const Beat& beat, WatchdogClock::time_point now);
  // The rank's control connection closed before it said it had finished.
  void lost(int rank, WatchdogClock::time_point now);
  void finished(int rank, WatchdogClock::time_point now);

  bool all_finished() const;
  // A report when the watchdog must fire: a rank lost, or a rank that has not finished
  // and made no progress (no beat, or never connected) for longer than the timeout.
  std::optional<HangReport> check(WatchdogClock::time_point now) const;

private:
  struct Slot {
    bool connected = false, lost = false, finished = false;
    std::optional<Beat> last;
    WatchdogClock::time_point since; // of the last event
    std::optional<RankLabel> label;
  };
  HangReport report(WatchdogClock::time_point now, const std::string& trigger) const;

  mutable std::mutex mutex_;
  std::chrono::nanoseconds timeout_;
  std::vector<Slot> slots_;
};

// The '#' lines printed on stdout when the watchdog fires.
std::string render_hang_report(const HangReport& report);

} // namespace fabric::nccltest
