// The latency engine: ping-pong over one QP, as perftest's ib_send_lat / ib_write_lat /
// ib_read_lat do it.
//
// - send: the client sends, the agent's receive completes and it sends back; the client's
//   sample is the round trip / 2.
// - write: the client writes into the agent's buffer; the agent sees the last byte change
//   (polling memory, no completion involved), writes back the same way; round trip / 2.
// - read: the client reads from the agent's buffer and waits for the completion; the
//   sample is the whole read (perftest reports it that way too). The agent is passive.
//
// Both sides busy-poll; one clock read per iteration (the time between two consecutive
// answers; SampleClock in rdma_clock.h: CLOCK_MONOTONIC_RAW, or the CPU cycle counter
// calibrated against it); small messages go inline; send completions are requested only
// every 16th message and reaped without waiting for them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "common/result.h"
#include "probes/rdma/rdma_exchange.h"
#include "probes/rdma/rdma_options.h"
#include "probes/rdma/rdma_recv.h"
#include "probes/rdma/rdma_resources.h"

namespace fabric::probes {

// Send queue depth and receive depth the latency tests ask for.
inline constexpr uint32_t kLatSendDepth = 64;
inline constexpr uint32_t kLatRecvDepth = 64;

struct LatPhase {
  RdmaOp op = RdmaOp::kSend;
  uint64_t size = 0;
  uint64_t iters = 0;
  std::chrono::milliseconds stall_timeout{std::chrono::seconds(10)};
  // Set by the agent when it cuts the session (it is stopping): the loop ends early.
  const std::atomic<bool>* cut = nullptr;
};

// The client's side: one sample per iteration, in microseconds (round trip / 2 for send
// and write, the whole read for read). `receives` must be primed for send.
Result<std::vector<double>> run_lat_client(RdmaResources& resources, const RdmaEndpoint& remote,
                                           const LatPhase& phase, ReceivePool& receives);

// The agent's side: answers every ping (send, write); nothing to do for read. Returns the
// number of pings answered.
Result<uint64_t> run_lat_server(RdmaResources& resources, const RdmaEndpoint& remote,
                                const LatPhase& phase, ReceivePool& receives);

// The value the write test puts in the last byte on iteration `i`: never 0 (the cleared
// buffer) and never the previous iteration's.
inline uint8_t write_tag(uint64_t i) {
  return static_cast<uint8_t>(i % 255 + 1);
}

} // namespace fabric::probes
