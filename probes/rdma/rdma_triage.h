// Turning an RDMA setup or data-path failure into "why it likely failed".
//
// Verbs and librdmacm report failures as a bare errno (EINVAL from a QP transition, ENOMEM
// from a registration, ETIMEDOUT from address resolution) or a completion status. The
// cause a user can act on is usually one of a few: the two sides use GIDs of different
// types, there is no GID for the address, the MTUs do not fit, the peer's MAC address
// could not be resolved (ARP/neighbour), the locked-memory limit is too small, or the peer
// went away. The facts needed to tell these apart are collected by the caller (GIDs, MTUs,
// RLIMIT_MEMLOCK); this file only decides. Pure logic, unit-tested.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/rdma_device.h"

namespace fabric::probes {

enum class RdmaStep {
  kOpenDevice,
  kRegisterMemory,
  kCreateQp,
  kModifyToInit,
  kModifyToRtr,
  kModifyToRts,
  kResolveAddress, // librdmacm: rdma_resolve_addr
  kResolveRoute,   // librdmacm: rdma_resolve_route
  kConnect,        // librdmacm: rdma_connect / waiting for ESTABLISHED
  kAccept,         // librdmacm: waiting for a connect request / rdma_accept
  kDataPhase,      // posting and completions
};

std::string_view rdma_step_name(RdmaStep step);

struct TriageFacts {
  std::string device;
  uint32_t port = 0;
  std::string netdev;    // this side's RoCE netdev
  std::string peer_ipv4; // the peer's address as this side uses it
  rdma::GidType local_gid_type = rdma::GidType::kUnknown;
  rdma::GidType remote_gid_type = rdma::GidType::kUnknown;
  std::string local_gid;  // text
  std::string remote_gid; // text
  uint32_t local_gid_index = 0;
  uint32_t local_active_mtu = 0;  // bytes
  uint32_t remote_active_mtu = 0; // bytes
  uint32_t path_mtu = 0;          // bytes, what the QP was asked to use
  // RLIMIT_MEMLOCK's soft limit; nullopt when unlimited.
  std::optional<uint64_t> memlock_limit;
  uint64_t register_bytes = 0;
  // librdmacm: the event that ended the wait ("RDMA_CM_EVENT_ADDR_ERROR") and its status.
  std::string cm_event;
  int cm_status = 0;
  // Data phase: the work completion status (ibv_wc_status) when one failed.
  std::optional<int> wc_status;
  bool stalled = false;     // no completion within the timeout
  std::string timeout_text; // "10s"
};

// The likely cause of a failure in `step` with `err` (an errno, 0 when the failure had
// none), in one sentence with what to do about it; "" when the facts point at nothing
// in particular.
std::string likely_cause(RdmaStep step, int err, const TriageFacts& facts);

// The error to report for a failure in `step`: `operation` and errno's text, and the
// likely cause as the hint. Codes are kSystem (exit 2), kTimeout for timeouts (exit 2),
// kPermission for EPERM/EACCES.
Error triage_error(RdmaStep step, std::string operation, int err, const TriageFacts& facts);

// "RETRY_EXC_ERR"-style names are verbs'; people get ibv_wc_status_str()'s words. This
// is the same table, kept here so that the logic does not need verbs headers.
std::string_view wc_status_text(int status);

} // namespace fabric::probes
