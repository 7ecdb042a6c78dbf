#include "probes/rdma/rdma_bw.h"

#include <arpa/inet.h>

#include <algorithm>
#include <vector>

#include "probes/rdma/rdma_clock.h"
#include "probes/rdma/rdma_completion_wait.h"
#include "probes/rdma/rdma_phase_errors.h"

namespace fabric::probes {
namespace {

constexpr int kPollBatch = 32;
constexpr uint32_t kPostBatch = 32;
// Idle polls between two looks at the clock (for the stall timeout and the duration).
constexpr uint32_t kIdleClockEvery = 256;
// The longest sleep on the completion channel: how late a cut is noticed.
constexpr int64_t kMaxSleepNs = 100'000'000;
constexpr uint64_t kUnbounded = UINT64_MAX;

// wr_id: the QP index in the low byte, the work request's sequence number above it.
inline uint64_t make_wr_id(uint64_t seq, std::size_t q) {
  return (seq << 8) | q;
}

struct SendState {
  ibv_qp* qp = nullptr;
  uint64_t posted = 0;
  uint64_t completed = 0;
  uint64_t target = kUnbounded;
  ibv_sge sge[kPostBatch];
  ibv_send_wr wr[kPostBatch];
};

// "waiting for completions (120 messages completed of 5000)".
std::string waiting_for(uint64_t done, uint64_t expected) {
  std::string progress = std::to_string(done) + " messages completed";
  if (expected != kUnbounded) progress += " of " + std::to_string(expected);
  return "waiting for completions (" + progress + ")";
}

bool was_cut(const BwPhase& p) {
  return p.cut != nullptr && p.cut->load(std::memory_order_relaxed);
}

} // namespace

uint32_t signal_interval(uint32_t tx_depth, uint64_t message_size) {
  uint64_t by_bytes = kSignalBytes / std::max<uint64_t>(message_size, 1);
  uint64_t every = std::min<uint64_t>({tx_depth / 2, 64, by_bytes});
  return static_cast<uint32_t>(std::max<uint64_t>(every, 1));
}

Result<SideStats> run_bw_phase(RdmaResources& r, const RdmaEndpoint& remote, const BwPhase& p,
                               ReceivePool& receives) {
  const std::size_t nqp = r.qp_count();
  const uint32_t signal_every = signal_interval(p.tx_depth, p.size);
  const bool timed = p.iters == 0;
  // Inline data is copied by the CPU at post time: never from GPU memory.
  const bool use_inline = p.op != RdmaOp::kRead && p.size <= r.max_inline() && !r.gpu_memory();
  const ibv_wr_opcode opcode = p.op == RdmaOp::kWrite  ? IBV_WR_RDMA_WRITE
                               : p.op == RdmaOp::kRead ? IBV_WR_RDMA_READ
                                                       : IBV_WR_SEND;

  // Everything the loop touches is set up here; the loop itself allocates nothing.
  std::vector<SendState> senders(p.send ? nqp : 0);
  for (std::size_t q = 0; q < senders.size(); ++q) {
    SendState& s = senders[q];
    s.qp = r.qp(q);
    s.target = timed ? kUnbounded : p.iters;
    for (uint32_t k = 0; k < kPostBatch; ++k) {
      s.sge[k].addr = r.address(r.local_half(q));
      s.sge[k].length = static_cast<uint32_t>(p.size);
      s.sge[k].lkey = r.lkey();
      ibv_send_wr& wr = s.wr[k];
      wr = ibv_send_wr{};
      wr.sg_list = &s.sge[k];
      wr.num_sge = 1;
      wr.opcode = opcode;
      wr.next = k + 1 < kPostBatch ? &s.wr[k + 1] : nullptr;
      if (p.op != RdmaOp::kSend) {
        wr.wr.rdma.remote_addr = remote.qps[q].addr;
        wr.wr.rdma.rkey = remote.rkey;
      }
    }
  }
  const int base_flags = use_inline ? IBV_SEND_INLINE : 0;
  const uint64_t total_target = timed ? kUnbounded : p.iters * senders.size();
  // Peak: the best rate over windows of a few full send queues.
  const uint64_t peak_window = std::max<uint64_t>(2ull * p.tx_depth * std::max<size_t>(nqp, 1), 64);

  std::vector<bool> receiving_done(p.receive ? nqp : 0, false);
  std::size_t receivers_left = receiving_done.size();
  std::size_t senders_left = senders.size();

  ibv_wc wc[kPollBatch];
  SideStats stats;
  uint64_t total_completed = 0;
  uint32_t idle = 0;
  const int64_t start = now_ns();
  int64_t last_progress = start;
  int64_t last_completion = start;
  int64_t window_start = start;
  uint64_t window_count = 0;
  const int64_t stop_at = timed ? start + p.duration.count() : INT64_MAX;
  const int64_t stall_ns = std::chrono::nanoseconds(p.stall_timeout).count();
  CompletionWaiter waiter(r.completion_channel());

  while (senders_left > 0 || receivers_left > 0) {
    bool progress = false;
    // Post as much as every QP's window allows, in linked lists.
    for (std::size_t q = 0; q < senders.size(); ++q) {
      SendState& s = senders[q];
      uint64_t window = p.tx_depth - (s.posted - s.completed);
      uint64_t n = std::min<uint64_t>({window, s.target - s.posted, kPostBatch});
      if (n == 0) continue;
      for (uint64_t k = 0; k < n; ++k) {
        uint64_t seq = s.posted + k;
        ibv_send_wr& wr = s.wr[k];
        wr.wr_id = make_wr_id(seq, q);
        bool last = seq + 1 == s.target;
        int flags = base_flags;
        if ((seq + 1) % signal_every == 0 || last) flags |= IBV_SEND_SIGNALED;
        wr.send_flags = flags;
        if (p.op == RdmaOp::kSend) {
          // The receiver learns that this QP is done from the immediate value.
          wr.opcode = last ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
          wr.imm_data = last ? htonl(1) : 0;
        }
      }
      s.wr[n - 1].next = nullptr;
      ibv_send_wr* bad = nullptr;
      int rc = ibv_post_send(s.qp, s.wr, &bad);
      s.wr[n - 1].next = n < kPostBatch ? &s.wr[n] : nullptr;
      if (rc != 0) {
        return Error::from_errno(rc, "ibv_post_send", "QP " + std::to_string(s.qp->qp_num));
      }
      s.posted += n;
      progress = true;
    }

    if (senders_left > 0) {
      int n = ibv_poll_cq(r.send_cq(), kPollBatch, wc);
      if (n < 0) return Error(ErrorCode::kSystem, "ibv_poll_cq", "send CQ");
      if (n > 0) {
        for (int i = 0; i < n; ++i) {
          if (wc[i].status != IBV_WC_SUCCESS) return completion_error(wc[i], r, remote, "send");
          std::size_t q = wc[i].wr_id & 0xff;
          SendState& s = senders[q];
          uint64_t done = (wc[i].wr_id >> 8) + 1;
          total_completed += done - s.completed;
          window_count += done - s.completed;
          s.completed = done;
          if (s.completed == s.target) --senders_left;
        }
        if (was_cut(p)) return cut_error("bandwidth run");
        int64_t t = now_ns();
        last_completion = last_progress = t;
        if (window_count >= peak_window && t > window_start) {
          double rate = static_cast<double>(window_count) * static_cast<double>(p.size) /
                        (static_cast<double>(t - window_start) * 1e-9);
          stats.peak_bytes_per_s = std::max(stats.peak_bytes_per_s, rate);
          window_start = t;
          window_count = 0;
        }
        if (timed && t >= stop_at) {
          // Time is up: each QP's next work request is its last.
          for (auto& s : senders) {
            if (s.target == kUnbounded) s.target = s.posted + 1;
          }
        }
        progress = true;
      }
    }

    if (receivers_left > 0) {
      int n = ibv_poll_cq(r.recv_cq(), kPollBatch, wc);
      if (n < 0) return Error(ErrorCode::kSystem, "ibv_poll_cq", "receive CQ");
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) return completion_error(wc[i], r, remote, "receive");
        std::size_t q = wc[i].wr_id;
        FABRIC_TRY(receives.consumed(q));
        if ((wc[i].wc_flags & IBV_WC_WITH_IMM) && !receiving_done[q]) {
          receiving_done[q] = true;
          --receivers_left;
        }
      }
      if (n > 0) {
        if (was_cut(p)) return cut_error("bandwidth run");
        progress = true;
        last_progress = now_ns();
      }
    }

    if (progress) {
      waiter.progressed();
      continue;
    }
    // Nothing completed: spin a while, then sleep until the next completion, the end of
    // the run or the stall timeout.
    FABRIC_ASSIGN_OR_RETURN(
        bool slept,
        waiter.idle(
            {senders_left > 0 ? r.send_cq() : nullptr, receivers_left > 0 ? r.recv_cq() : nullptr},
            [&] {
              const int64_t t = now_ns();
              const int64_t wake_by =
                  std::min({stop_at, last_progress + stall_ns, t + kMaxSleepNs});
              // Rounded up: a 0 ms poll would spin until the deadline.
              return std::chrono::milliseconds((wake_by - t + 999'999) / 1'000'000);
            }));
    if (slept || ++idle >= kIdleClockEvery) {
      idle = 0;
      if (was_cut(p)) return cut_error("bandwidth run");
      int64_t t = now_ns();
      if (timed && t >= stop_at) {
        for (auto& s : senders) {
          if (s.target == kUnbounded) s.target = s.posted + 1;
        }
      }
      if (t - last_progress > stall_ns) {
        return stall_error(r, remote, p.stall_timeout, waiting_for(total_completed, total_target));
      }
    }
  }
  FABRIC_TRY(receives.flush());

  stats.messages = total_completed;
  stats.bytes = total_completed * p.size;
  stats.seconds = static_cast<double>(last_completion - start) * 1e-9;
  if (stats.seconds > 0) {
    double avg = static_cast<double>(stats.bytes) / stats.seconds;
    // A run too short for one whole window has only its average as the peak.
    stats.peak_bytes_per_s = std::max(stats.peak_bytes_per_s, avg);
  }
  return stats;
}

} // namespace fabric::probes
