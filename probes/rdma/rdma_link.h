// One side of an established RDMA test connection: the resources, both endpoints, what
// the report says about them, and the receive pool. Built by the client and by the agent
// over the channel, out-of-band (QP numbers in the endpoint messages) or with librdmacm.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include <rapidjson/document.h>

#include "common/result.h"
#include "libs/agent_channel/channel.h"
#include "probes/devices/counters.h"
#include "probes/rdma/rdma_cm_connect.h"
#include "probes/rdma/rdma_exchange.h"
#include "probes/rdma/rdma_options.h"
#include "probes/rdma/rdma_recv.h"
#include "probes/rdma/rdma_report.h"
#include "probes/rdma/rdma_resources.h"

namespace fabric::probes {

inline constexpr const char* kMsgCmRequest = "rdma_cm_request";

struct RdmaLink {
  // Exactly one of the two owns the resources (`resources` points at them). Members are
  // destroyed in reverse order, so `owned` goes before `cm`.
  std::unique_ptr<CmConnection> cm;
  std::unique_ptr<RdmaResources> owned;
  RdmaResources* resources = nullptr;
  RdmaEndpoint local;
  RdmaEndpoint remote;
  RdmaConnectionInfo info;
  ReceivePool receives;
};

// Queue sizes and buffer for a test's options (both sides use the same).
ResourceSpec resource_spec(const RdmaOptions& options);

// The client: picks its GID (or lets librdmacm), exchanges endpoints, connects its QPs
// and posts its receives.
Result<std::unique_ptr<RdmaLink>> connect_client_link(Channel& channel, const RdmaOptions& options);
// The agent: the same from the other end; `options` are the client's (see server_view()).
Result<std::unique_ptr<RdmaLink>> accept_server_link(Channel& channel, const RdmaOptions& options);

// How long one side may wait for the other's next message while a run of `size` goes
// on: the step timeout, plus the run's duration or its messages at a pessimistic 1 MB/s
// and at least 100 us each (a one-sided run gives the passive side nothing else to
// watch; a peer that dies closes the channel long before).
std::chrono::milliseconds phase_bound(const RdmaOptions& options, uint64_t size);

// A counter snapshot of the link's port and netdev; nullopt (and a debug log) when the
// counters cannot be read.
std::optional<CounterSnapshot> snapshot_counters(const RdmaLink& link);

} // namespace fabric::probes
