// Receive work requests for the send/receive tests: a fixed number stay posted on every
// QP; each one consumed is reposted at once, in batches, so that the sender never waits
// for a receiver-not-ready retry.
//
// Receives always cover a QP's whole remote half (the largest message of the test), so
// the ones left over from one message size fit the next: the pool lives as long as the
// QPs and is primed once.
#pragma once

#include <cstdint>
#include <vector>

#include <infiniband/verbs.h>

#include "common/result.h"
#include "probes/rdma/rdma_resources.h"

namespace fabric::probes {

class ReceivePool {
public:
  static constexpr uint32_t kBatch = 32;

  // Posts `depth` receives on every QP of `resources` (depth <= its recv_depth).
  Result<void> prime(RdmaResources& resources, uint32_t depth);

  // Counts one consumed receive of QP `q`; reposts when a batch has gathered.
  Result<void> consumed(std::size_t q) {
    if (++pending_[q] >= kBatch) return repost(q);
    return Ok();
  }
  // Reposts everything consumed so far (call when the sender may be waiting on it).
  Result<void> flush();

private:
  Result<void> repost(std::size_t q);

  struct QpReceives {
    ibv_qp* qp = nullptr;
    ibv_sge sge[kBatch];
    ibv_recv_wr wr[kBatch];
  };
  std::vector<QpReceives> qps_;
  std::vector<uint32_t> pending_;
};

} // namespace fabric::probes
