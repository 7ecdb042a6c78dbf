// The bandwidth engine: RDMA write, read or send over every QP of one side, for a number
// of messages per QP or for a duration, measured on the sending side (perftest measures
// ib_write_bw the same way: from the first post to the last completion).
//
// How it reaches line rate on hardware (and perftest's figures on soft-RoCE):
// - The send queue of every QP is kept full: up to --tx-depth work requests are
//   outstanding per QP. At 64 KiB and depth 128 that is 8 MiB in flight per QP, enough to
//   cover a 160 us round trip at 400 Gb/s; several QPs (--qps 4) spread the traffic over
//   the NIC's send engines (and, with RoCE v2's UDP source ports, over ECMP paths) and
//   hide the per-message turnaround of a single QP.
// - Work requests are prebuilt once per QP and posted as linked lists of up to 32 (one
//   doorbell for many messages; on soft-RoCE one system call for many).
// - Selective signaling: only every Nth work request (N = tx-depth/2, at most 64) asks
//   for a completion, so the NIC writes and the CPU reads few CQEs; a completion
//   retires every earlier request of its QP.
// - Completions are polled 32 at a time from one CQ shared by all QPs, busy, with no
//   system call, allocation or logging in the loop; the clock is read only when
//   completions arrive (or every few hundred idle polls, for the stall timeout).
// - Small messages go inline (copied into the work request) when the QP accepts them.
// - For send/receive, receives stay posted ahead (rdma_recv.h), and the last message of
//   each QP carries an immediate value so that the receiver knows the run ended without
//   counting (which a timed run could not).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/result.h"
#include "probes/rdma/rdma_exchange.h"
#include "probes/rdma/rdma_options.h"
#include "probes/rdma/rdma_recv.h"
#include "probes/rdma/rdma_resources.h"

namespace fabric::probes {

struct BwPhase {
  RdmaOp op = RdmaOp::kWrite;
  uint64_t size = 0;
  uint64_t iters = 0; // per QP; 0 with a duration
  std::chrono::nanoseconds duration{0};
  uint32_t tx_depth = kDefaultTxDepth;
  bool send = true;     // this side posts the operation
  bool receive = false; // this side takes the peer's sends (op send, the peer sends)
  std::chrono::milliseconds stall_timeout{std::chrono::seconds(10)};
  // Set by the agent when it cuts the session (it is stopping): the loop ends early.
  const std::atomic<bool>* cut = nullptr;
};

// Selective signaling: every how many work requests one asks for a completion. At most
// half the TX depth (so a QP's window reopens before it is empty) and 64, and at most
// kSignalBytes of messages, so that the first completion of a run with large messages on
// many QPs does not wait for gigabytes to cross the wire (the stall timeout would take
// that for a hang).
inline constexpr uint64_t kSignalBytes = 4ull << 20;
uint32_t signal_interval(uint32_t tx_depth, uint64_t message_size);

// Runs one phase. `receives` must be primed when `phase.receive` is set. Returns what this
// side sent (all zero for a receive-only phase).
Result<SideStats> run_bw_phase(RdmaResources& resources, const RdmaEndpoint& remote,
                               const BwPhase& phase, ReceivePool& receives);

} // namespace fabric::probes
