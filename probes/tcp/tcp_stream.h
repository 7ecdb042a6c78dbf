// The data path of the TCP bandwidth test, the same on the agent and the client: a thread
// per stream and direction, large writes from one buffer allocated per stream, blocking
// sockets whose SO_SNDTIMEO/SO_RCVTIMEO turn a silent peer into an error (one system call
// per chunk, nothing else in the loop, so that the probe measures the network and not
// itself).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/error.h"

namespace fabric::probes {

struct StreamPlan {
  bool send = false;
  bool receive = false;
  std::size_t write_size = 128 * 1024;
  // The sender stops after `bytes` (when non-zero) or after `duration`.
  uint64_t bytes = 0;
  std::chrono::nanoseconds duration{std::chrono::seconds(10)};
  // When set, every stream adds the bytes it moves (both directions) as it goes, for a
  // reader in another thread (the client's per-second intervals).
  std::atomic<uint64_t>* moved = nullptr;
};

struct Transfer {
  uint64_t bytes = 0;
  // First and last byte moved: the sender's first write and last completed write, the
  // receiver's first and last read with data. Unset when nothing moved.
  std::optional<std::chrono::steady_clock::time_point> first;
  std::optional<std::chrono::steady_clock::time_point> last;
};

struct StreamResult {
  Transfer sent;
  Transfer received;
  std::optional<Error> error;
};

// Runs the plan on every socket at once and returns when all are done: the senders
// half-close their socket when finished, the receivers read until the peer's half-close.
// The sockets must be blocking with an I/O timeout set (set_io_timeout()).
std::vector<StreamResult> run_streams(const std::vector<int>& fds, const StreamPlan& plan);

// Totals over streams: bytes summed, seconds from the earliest first byte to the latest
// last byte.
struct TransferTotals {
  uint64_t bytes = 0;
  double seconds = 0;
  double gbps() const;
  double gbytes_per_s() const;
};
TransferTotals total_sent(const std::vector<StreamResult>& results);
TransferTotals total_received(const std::vector<StreamResult>& results);

// The first stream error, with the stream number in its context.
std::optional<Error> first_error(const std::vector<StreamResult>& results);

} // namespace fabric::probes
