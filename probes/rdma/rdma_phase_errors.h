// The errors a data phase (the rdma_bw and rdma_lat loops) ends with, triaged the same
// way for both: a failed completion, no completion within the stall timeout, or the
// agent cutting the session because it is stopping.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <string>

#include "common/error.h"
#include "probes/rdma/rdma_exchange.h"
#include "probes/rdma/rdma_resources.h"

namespace fabric::probes {

// A work completion with an error status on `queue` ("send", "receive").
Error completion_error(const ibv_wc& wc, const RdmaResources& resources, const RdmaEndpoint& remote,
                       const char* queue);

// Nothing completed for `timeout` while `waiting_for` ("waiting for the peer's message").
Error stall_error(const RdmaResources& resources, const RdmaEndpoint& remote,
                  std::chrono::milliseconds timeout, const std::string& waiting_for);

// The agent cut the session (kTryAgain): it is stopping, the run did not fail.
Error cut_error(const std::string& what);

} // namespace fabric::probes
