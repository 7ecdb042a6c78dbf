#include "probes/rdma/rdma_recv.h"

#include <algorithm>

namespace fabric::probes {

Result<void> ReceivePool::prime(RdmaResources& r, uint32_t depth) {
  // Sized once: the work requests point into these arrays.
  qps_.assign(r.qp_count(), QpReceives{});
  pending_.assign(r.qp_count(), 0);
  for (std::size_t q = 0; q < r.qp_count(); ++q) {
    QpReceives& s = qps_[q];
    s.qp = r.qp(q);
    for (uint32_t k = 0; k < kBatch; ++k) {
      s.sge[k].addr = r.address(r.remote_half(q));
      s.sge[k].length = static_cast<uint32_t>(r.region_bytes());
      s.sge[k].lkey = r.lkey();
      s.wr[k].wr_id = q;
      s.wr[k].sg_list = &s.sge[k];
      s.wr[k].num_sge = 1;
      s.wr[k].next = k + 1 < kBatch ? &s.wr[k + 1] : nullptr;
    }
    // Prime in batches: the pending count doubles as "how many to post".
    for (uint32_t left = depth; left > 0;) {
      uint32_t n = std::min(left, kBatch);
      pending_[q] = n;
      FABRIC_TRY(repost(q));
      left -= n;
    }
  }
  return Ok();
}

Result<void> ReceivePool::repost(std::size_t q) {
  uint32_t n = pending_[q];
  if (n == 0) return Ok();
  QpReceives& s = qps_[q];
  s.wr[n - 1].next = nullptr;
  ibv_recv_wr* bad = nullptr;
  int rc = ibv_post_recv(s.qp, s.wr, &bad);
  s.wr[n - 1].next = n < kBatch ? &s.wr[n] : nullptr;
  if (rc != 0) return Error::from_errno(rc, "ibv_post_recv", "QP " + std::to_string(s.qp->qp_num));
  pending_[q] = 0;
  return Ok();
}

Result<void> ReceivePool::flush() {
  for (std::size_t q = 0; q < qps_.size(); ++q)
    FABRIC_TRY(repost(q));
  return Ok();
}

} // namespace fabric::probes
