// Connecting the test's QPs through librdmacm (--cm): the RDMA connection manager
// resolves the peer's address to a device, GID and path (as NCCL's and MPI's RoCE
// transports do) and exchanges the QP numbers itself, over RoCE. The agent channel still
// carries the buffers' keys and addresses, and the CM port the agent listens on.
//
// Every wait for a CM event is bounded (poll on the event channel's fd with a deadline),
// so an address that never resolves or a peer that never answers ends in a timeout with
// its likely cause, never a hang.
//
// Ownership: the QPs belong to their CM ids (rdma_create_qp) and the device context to
// librdmacm; the destructor destroys QPs, then the test's resources, then the ids.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rdma/rdma_cma.h>

#include "common/result.h"
#include "probes/rdma/rdma_resources.h"

namespace fabric::probes {

// What librdmacm chose for a connected QP.
struct CmPath {
  uint32_t sgid_index = 0;
  uint32_t mtu = 0; // bytes
};

class CmConnection {
public:
  // Client side: resolves server_ipv4:cm_port, creates the resources on the device the
  // route leads to, and connects spec.qps QPs one after the other.
  static Result<std::unique_ptr<CmConnection>> connect(const std::string& server_ipv4,
                                                       uint16_t cm_port, const ResourceSpec& spec,
                                                       uint8_t tos,
                                                       std::chrono::milliseconds timeout);
  // Agent side, first half: listens on local_ipv4 (an ephemeral port) and creates the
  // resources on the device that owns the address.
  static Result<std::unique_ptr<CmConnection>> listen(const std::string& local_ipv4,
                                                      const ResourceSpec& spec, uint8_t tos);
  // Agent side, second half: accepts the client's spec.qps connections.
  Result<void> accept_all(std::chrono::milliseconds timeout);

  CmConnection(const CmConnection&) = delete;
  CmConnection& operator=(const CmConnection&) = delete;
  ~CmConnection();

  uint16_t listen_port() const;
  RdmaResources& resources() { return *resources_; }
  // The GID index and path MTU of QP 0, as the CM set them.
  Result<CmPath> path() const;

private:
  CmConnection() = default;
  // The next event on the channel within min(wait_ms, 1 s); nullptr when none came (the
  // caller loops and checks its own deadline). The caller acks it.
  Result<rdma_cm_event*> next_event(int64_t wait_ms);
  Result<rdma_cm_event*> wait_event(rdma_cm_event_type expected, int64_t deadline_ns,
                                    RdmaStep step);
  Result<void> add_qp(rdma_cm_id* id);

  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* listen_id_ = nullptr;
  std::vector<rdma_cm_id*> ids_;
  std::unique_ptr<RdmaResources> resources_;
  std::string peer_ipv4_;
  uint8_t tos_ = 0;
};

} // namespace fabric::probes
