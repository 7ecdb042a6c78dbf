#include "probes/rdma/rdma_lat.h"

#include "probes/rdma/rdma_clock.h"
#include "probes/rdma/rdma_phase_errors.h"

namespace fabric::probes {
namespace {

constexpr uint64_t kSignalEvery = 16;
constexpr uint32_t kSpinsPerClockCheck = 4096;

class Stall {
public:
  Stall(const RdmaResources& r, const RdmaEndpoint& remote, const LatPhase& phase)
      : r_(r), remote_(remote), timeout_(phase.stall_timeout), cut_(phase.cut),
        limit_ns_(std::chrono::nanoseconds(timeout_).count()), last_(now_ns()) {}

  // An answer came: the stall clock restarts (read lazily, at the next idle check).
  void answered() { fresh_ = true; }
  // Called on every idle spin; looks at the clock (and whether the agent cut the session)
  // only now and then.
  bool expired() {
    if (++spins_ < kSpinsPerClockCheck) return false;
    spins_ = 0;
    if (cut_ != nullptr && cut_->load(std::memory_order_relaxed)) {
      was_cut_ = true;
      return true;
    }
    int64_t t = now_ns();
    if (fresh_) {
      fresh_ = false;
      last_ = t;
      return false;
    }
    return t - last_ > limit_ns_;
  }
  Error error(const std::string& waiting_for) const {
    if (was_cut_) return cut_error(waiting_for);
    return stall_error(r_, remote_, timeout_, waiting_for);
  }
  Error completion_error(const ibv_wc& wc, const char* queue) const {
    return probes::completion_error(wc, r_, remote_, queue);
  }

private:
  const RdmaResources& r_;
  const RdmaEndpoint& remote_;
  std::chrono::milliseconds timeout_;
  const std::atomic<bool>* cut_;
  int64_t limit_ns_;
  int64_t last_;
  uint32_t spins_ = 0;
  bool fresh_ = false;
  bool was_cut_ = false;
};

// One prebuilt work request, posted again and again, with a completion asked for every
// kSignalEvery-th time and reaped opportunistically.
class Poster {
public:
  Poster(RdmaResources& r, const RdmaEndpoint& remote, ibv_wr_opcode opcode, uint64_t size,
         Stall& stall)
      : qp_(r.qp(0)), cq_(r.send_cq()), stall_(stall) {
    sge_.addr = r.address(r.local_half(0));
    sge_.length = static_cast<uint32_t>(size);
    sge_.lkey = r.lkey();
    wr_.sg_list = &sge_;
    wr_.num_sge = 1;
    wr_.opcode = opcode;
    if (opcode != IBV_WR_SEND) {
      wr_.wr.rdma.remote_addr = remote.qps[0].addr;
      wr_.wr.rdma.rkey = remote.rkey;
    }
    // Inline data is copied by the CPU at post time: never from GPU memory.
    const bool use_inline = opcode != IBV_WR_RDMA_READ && size <= r.max_inline() && !r.gpu_memory();
    base_flags_ = use_inline ? IBV_SEND_INLINE : 0;
  }

  // `always_signal` for reads (their completion is the measurement) and for the last
  // message of a phase (so that the send queue is empty when the phase ends).
  Result<void> post(bool always_signal) {
    while (posted_ - completed_ >= kLatSendDepth - kSignalEvery) {
      FABRIC_TRY(reap());
      if (posted_ - completed_ >= kLatSendDepth - kSignalEvery && stall_.expired()) {
        return stall_.error("waiting for send completions");
      }
    }
    const bool signal = always_signal || posted_ % kSignalEvery == kSignalEvery - 1;
    wr_.wr_id = posted_;
    wr_.send_flags = base_flags_ | (signal ? IBV_SEND_SIGNALED : 0);
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(qp_, &wr_, &bad); rc != 0) {
      return Error::from_errno(rc, "ibv_post_send", "QP " + std::to_string(qp_->qp_num));
    }
    ++posted_;
    if (signal) last_signaled_ = posted_;
    return Ok();
  }

  // Polls the send CQ once; true when a completion came.
  Result<bool> reap() {
    ibv_wc wc[4];
    int n = ibv_poll_cq(cq_, 4, wc);
    if (n < 0) return Error(ErrorCode::kSystem, "ibv_poll_cq", "send CQ");
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return stall_.completion_error(wc[i], "send");
      completed_ = wc[i].wr_id + 1;
    }
    return n > 0;
  }

  // Waits until the last signaled message completed: everything before it did too.
  Result<void> drain() {
    while (completed_ < last_signaled_) {
      FABRIC_ASSIGN_OR_RETURN(bool got, reap());
      if (!got && stall_.expired()) return stall_.error("waiting for the last send completion");
    }
    return Ok();
  }

private:
  ibv_qp* qp_;
  ibv_cq* cq_;
  Stall& stall_;
  ibv_sge sge_{};
  ibv_send_wr wr_{};
  int base_flags_ = 0;
  uint64_t posted_ = 0;
  uint64_t completed_ = 0;
  uint64_t last_signaled_ = 0;
};

// Busy-polls the receive CQ for one completion and gives the buffer back.
Result<void> wait_receive(RdmaResources& r, ReceivePool& receives, Stall& stall) {
  ibv_wc wc;
  for (;;) {
    int n = ibv_poll_cq(r.recv_cq(), 1, &wc);
    if (n == 1) break;
    if (n < 0) return Error(ErrorCode::kSystem, "ibv_poll_cq", "receive CQ");
    if (stall.expired()) return stall.error("waiting for the peer's message");
  }
  if (wc.status != IBV_WC_SUCCESS) return stall.completion_error(wc, "receive");
  return receives.consumed(0);
}

// Busy-polls the last byte of the remote half until the peer's write of `tag` landed.
Result<void> wait_tag(const volatile uint8_t* byte, uint8_t tag, Stall& stall) {
  while (*byte != tag) {
    if (stall.expired()) return stall.error("waiting for the peer's write");
  }
  return Ok();
}

} // namespace

Result<std::vector<double>> run_lat_client(RdmaResources& r, const RdmaEndpoint& remote,
                                           const LatPhase& p, ReceivePool& receives) {
  std::vector<double> samples(p.iters);
  Stall stall(r, remote, p);
  const ibv_wr_opcode opcode = p.op == RdmaOp::kSend    ? IBV_WR_SEND
                               : p.op == RdmaOp::kWrite ? IBV_WR_RDMA_WRITE
                                                        : IBV_WR_RDMA_READ;
  Poster poster(r, remote, opcode, p.size, stall);
  uint8_t* tx_tag = r.local_half(0) + p.size - 1;
  const volatile uint8_t* rx_tag = r.remote_half(0) + p.size - 1;
  // Round trip / 2 for ping-pong; a read's round trip is one operation.
  const double scale = p.op == RdmaOp::kRead ? 1e-3 : 0.5e-3;

  SampleClock clock;
  clock.begin();
  int64_t prev = clock.ticks();
  for (uint64_t i = 0; i < p.iters; ++i) {
    const bool last = i + 1 == p.iters;
    switch (p.op) {
    case RdmaOp::kSend:
      FABRIC_TRY(poster.post(last));
      FABRIC_TRY(wait_receive(r, receives, stall));
      FABRIC_TRY(poster.reap());
      break;
    case RdmaOp::kWrite:
      *tx_tag = write_tag(i);
      FABRIC_TRY(poster.post(last));
      FABRIC_TRY(wait_tag(rx_tag, write_tag(i), stall));
      FABRIC_TRY(poster.reap());
      break;
    case RdmaOp::kRead:
      FABRIC_TRY(poster.post(true));
      FABRIC_TRY(poster.drain());
      break;
    }
    int64_t t = clock.ticks();
    samples[i] = static_cast<double>(t - prev);
    prev = t;
    stall.answered();
  }
  clock.end();
  // Ticks to microseconds, and round trip / 2 where the sample is a ping-pong.
  const double factor = clock.ns_per_tick() * scale;
  for (double& s : samples)
    s *= factor;
  FABRIC_TRY(poster.drain());
  FABRIC_TRY(receives.flush());
  return samples;
}

Result<uint64_t> run_lat_server(RdmaResources& r, const RdmaEndpoint& remote, const LatPhase& p,
                                ReceivePool& receives) {
  if (p.op == RdmaOp::kRead) return uint64_t{0};
  Stall stall(r, remote, p);
  const ibv_wr_opcode opcode = p.op == RdmaOp::kSend ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
  Poster poster(r, remote, opcode, p.size, stall);
  uint8_t* tx_tag = r.local_half(0) + p.size - 1;
  const volatile uint8_t* rx_tag = r.remote_half(0) + p.size - 1;
  for (uint64_t i = 0; i < p.iters; ++i) {
    const bool last = i + 1 == p.iters;
    if (p.op == RdmaOp::kSend) {
      FABRIC_TRY(wait_receive(r, receives, stall));
    } else {
      FABRIC_TRY(wait_tag(rx_tag, write_tag(i), stall));
      *tx_tag = write_tag(i);
    }
    FABRIC_TRY(poster.post(last));
    FABRIC_TRY(poster.reap());
    stall.answered();
  }
  FABRIC_TRY(poster.drain());
  FABRIC_TRY(receives.flush());
  return p.iters;
}

} // namespace fabric::probes
