#include "probes/rdma/rdma_triage.h"

#include <cerrno>
#include <cstring>

#include "common/units.h"

namespace fabric::probes {
namespace {

// ibv_wc_status values (verbs.h), by number.
constexpr int kWcLocLenErr = 1;
constexpr int kWcLocQpOpErr = 2;
constexpr int kWcLocProtErr = 4;
constexpr int kWcWrFlushErr = 5;
constexpr int kWcLocAccessErr = 8;
constexpr int kWcRemInvReqErr = 9;
constexpr int kWcRemAccessErr = 10;
constexpr int kWcRemOpErr = 11;
constexpr int kWcRetryExcErr = 12;
constexpr int kWcRnrRetryExcErr = 13;

std::string errno_name(int err) {
  switch (err) {
  case EINVAL: return "EINVAL";
  case ENOMEM: return "ENOMEM";
  case ETIMEDOUT: return "ETIMEDOUT";
  case EHOSTUNREACH: return "EHOSTUNREACH";
  case ENETUNREACH: return "ENETUNREACH";
  case ENODATA: return "ENODATA";
  case EPERM: return "EPERM";
  case EACCES: return "EACCES";
  case ENODEV: return "ENODEV";
  case ENOENT: return "ENOENT";
  case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
  case ECONNREFUSED: return "ECONNREFUSED";
  case ECONNRESET: return "ECONNRESET";
  case EFAULT: return "EFAULT";
  case EAGAIN: return "EAGAIN";
  default: return "errno " + std::to_string(err);
  }
}

std::string errno_text(int err) {
  char buf[128];
  // GNU strerror_r returns the message, not always in buf.
  const char* text = strerror_r(err, buf, sizeof buf);
  return std::string(text) + " (" + errno_name(err) + ")";
}

std::string gid_type_words(rdma::GidType t) {
  return std::string(rdma::gid_type_name(t));
}

bool neighbour_errno(int err) {
  // The kernel resolves a RoCE peer's MAC address from its GID when the QP moves to RTR
  // (and librdmacm when it resolves the address); a neighbour entry that stays
  // INCOMPLETE ends as one of these.
  return err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == ENODATA;
}

std::string neighbour_cause(const TriageFacts& f) {
  std::string peer = f.peer_ipv4.empty() ? "the peer" : f.peer_ipv4;
  std::string dev = f.netdev.empty() ? "the RoCE netdev" : f.netdev;
  return "neighbour (ARP) resolution failed: " + dev + " got no answer for " + peer +
         "; check that the peer is up with that address on the same L2 segment (or routed), "
         "and look at `ip neigh show dev " +
         dev + "`";
}

std::string gid_type_cause(const TriageFacts& f) {
  return "GID type mismatch: this side uses a " + gid_type_words(f.local_gid_type) + " GID (" +
         f.local_gid + "), the peer a " + gid_type_words(f.remote_gid_type) + " GID (" +
         f.remote_gid +
         "); both ends must use the same RoCE version (pick RoCE v2 with --gid-index, or leave "
         "it out on both sides)";
}

std::string mtu_cause(const TriageFacts& f) {
  return "MTU mismatch: the path MTU " + std::to_string(f.path_mtu) +
         " is larger than this port's active MTU " + std::to_string(f.local_active_mtu) +
         (f.remote_active_mtu ? " (peer's: " + std::to_string(f.remote_active_mtu) + ")" : "") +
         "; lower --mtu or raise the netdev MTU (RoCE needs the netdev MTU above the RDMA MTU "
         "plus headers)";
}

bool mtu_too_big(const TriageFacts& f) {
  return f.path_mtu != 0 && ((f.local_active_mtu != 0 && f.path_mtu > f.local_active_mtu) ||
                             (f.remote_active_mtu != 0 && f.path_mtu > f.remote_active_mtu));
}

std::string no_gid_cause(const TriageFacts& f) {
  return "no usable GID: index " + std::to_string(f.local_gid_index) + " of " + f.device +
         " port " + std::to_string(f.port) +
         " is empty or not tied to a netdev with an address; list the table with "
         "`fabric-probe devices` and pick the RoCE v2 GID of the address used to reach the "
         "peer (or leave --gid-index out)";
}

std::string memlock_cause(const TriageFacts& f) {
  if (f.memlock_limit && f.register_bytes > *f.memlock_limit) {
    return "the locked-memory limit (ulimit -l) is " + units::format_size(*f.memlock_limit) +
           ", less than the " + units::format_size(f.register_bytes) +
           " this test registers; raise it (`ulimit -l unlimited`, LimitMEMLOCK=infinity for a "
           "systemd service, or the container's memlock ulimit)";
  }
  return "";
}

std::string wc_cause(int status, const TriageFacts& f) {
  switch (status) {
  case kWcRetryExcErr:
    return "the peer stopped acknowledging (transport retries exhausted): its process ended, "
           "the link or route went away, or the fabric drops packets; if it never worked, "
           "check that both GIDs are on the same subnet" +
           std::string(f.peer_ipv4.empty() ? "" : " (peer " + f.peer_ipv4 + ")");
  case kWcRnrRetryExcErr:
    return "the peer had no receive buffer posted in time (receiver not ready): it stopped "
           "or fell behind";
  case kWcRemAccessErr:
  case kWcRemInvReqErr:
    return "the peer refused the access (remote key, address or length outside its "
           "registered buffer, or its QP lacks remote read/write rights): both sides must run "
           "the same fabric-probe version";
  case kWcRemOpErr: return "the peer's QP failed while handling the request";
  case kWcLocQpOpErr:
    // rxe resolves the route of every packet in the initial network namespace with the
    // GID netdev's ifindex as the output device; a netdev inside a pod is not there.
    return "the device could not build the packet: no route from the GID's netdev to the "
           "peer" +
           std::string(f.peer_ipv4.empty() ? "" : " " + f.peer_ipv4) +
           "; soft-RoCE (rxe) looks routes up in the host's network namespace only, so it "
           "fails this way from a pod's interface (test from the host, or use a RoCE NIC)";
  case kWcLocLenErr:
  case kWcLocProtErr:
  case kWcLocAccessErr:
    return "a local buffer or key was rejected by the device (registration problem)";
  case kWcWrFlushErr:
    return "the queue pair went to the error state (an earlier failure flushed this work "
           "request)";
  default: return "";
  }
}

} // namespace

std::string_view rdma_step_name(RdmaStep step) {
  switch (step) {
  case RdmaStep::kOpenDevice: return "opening the RDMA device";
  case RdmaStep::kRegisterMemory: return "registering memory";
  case RdmaStep::kCreateQp: return "creating a queue pair";
  case RdmaStep::kModifyToInit: return "moving the queue pair to INIT";
  case RdmaStep::kModifyToRtr: return "moving the queue pair to RTR";
  case RdmaStep::kModifyToRts: return "moving the queue pair to RTS";
  case RdmaStep::kResolveAddress: return "resolving the peer's address (librdmacm)";
  case RdmaStep::kResolveRoute: return "resolving the route to the peer (librdmacm)";
  case RdmaStep::kConnect: return "connecting (librdmacm)";
  case RdmaStep::kAccept: return "accepting the connection (librdmacm)";
  case RdmaStep::kDataPhase: return "moving data";
  }
  return "?";
}

std::string_view wc_status_text(int status) {
  static constexpr const char* kText[] = {"success",
                                          "local length error",
                                          "local QP operation error",
                                          "local EE context operation error",
                                          "local protection error",
                                          "Work Request Flushed Error",
                                          "memory management operation error",
                                          "bad response error",
                                          "local access error",
                                          "remote invalid request error",
                                          "remote access error",
                                          "remote operation error",
                                          "transport retry counter exceeded",
                                          "RNR retry counter exceeded",
                                          "local RDD violation error",
                                          "remote invalid RD request",
                                          "aborted error",
                                          "invalid EE context number",
                                          "invalid EE context state",
                                          "fatal error",
                                          "response timeout error",
                                          "general error"};
  if (status < 0 || static_cast<std::size_t>(status) >= std::size(kText)) return "unknown status";
  return kText[status];
}

std::string likely_cause(RdmaStep step, int err, const TriageFacts& f) {
  const bool types_known =
      f.local_gid_type != rdma::GidType::kUnknown && f.remote_gid_type != rdma::GidType::kUnknown;
  switch (step) {
  case RdmaStep::kOpenDevice:
    if (err == EPERM || err == EACCES) {
      return "no access to /dev/infiniband/uverbs*: run as root or give the user access to "
             "the RDMA device";
    }
    return "";
  case RdmaStep::kRegisterMemory:
    if (err == ENOMEM || err == EPERM || err == EAGAIN) {
      std::string memlock = memlock_cause(f);
      if (!memlock.empty()) return memlock;
      if (err == ENOMEM) return "the device or the kernel could not pin that much memory";
    }
    if (err == EFAULT) return "the buffer is not memory the device can register";
    return "";
  case RdmaStep::kCreateQp:
    if (err == ENOMEM || err == EINVAL) {
      return "the device refused the queue sizes (TX depth or inline size above its limits)";
    }
    return "";
  case RdmaStep::kModifyToInit:
    if (err == EINVAL) {
      return "port " + std::to_string(f.port) + " of " + f.device +
             " refused the queue pair: is it the right --ib-port, and is the port ACTIVE?";
    }
    return "";
  case RdmaStep::kModifyToRtr:
    if (types_known && f.local_gid_type != f.remote_gid_type) return gid_type_cause(f);
    if (mtu_too_big(f)) return mtu_cause(f);
    if (neighbour_errno(err)) return neighbour_cause(f);
    if (err == EINVAL || err == ENOENT || err == EADDRNOTAVAIL) return no_gid_cause(f);
    return "";
  case RdmaStep::kModifyToRts:
    if (types_known && f.local_gid_type != f.remote_gid_type) return gid_type_cause(f);
    return "";
  case RdmaStep::kResolveAddress:
    if (neighbour_errno(err) || f.cm_event == "RDMA_CM_EVENT_ADDR_ERROR") {
      if (err == EADDRNOTAVAIL || err == ENODEV) {
        return "no RDMA device owns the local address used to reach " + f.peer_ipv4 +
               " (no GID for that address): route the test over the RoCE netdev";
      }
      return neighbour_cause(f);
    }
    if (err == EADDRNOTAVAIL || err == ENODEV) {
      return "no RDMA device owns the local address used to reach " + f.peer_ipv4 +
             " (no GID for that address): route the test over the RoCE netdev";
    }
    return "";
  case RdmaStep::kResolveRoute:
    if (neighbour_errno(err) || f.cm_event == "RDMA_CM_EVENT_ROUTE_ERROR") {
      return "no route to " + f.peer_ipv4 + " over an RDMA device: " + neighbour_cause(f);
    }
    return "";
  case RdmaStep::kConnect:
    if (f.cm_event == "RDMA_CM_EVENT_REJECTED") {
      return "the peer's librdmacm rejected the connection: nothing listens on that CM port "
             "any more (the agent's test ended) or the peer refused the parameters";
    }
    if (f.cm_event == "RDMA_CM_EVENT_UNREACHABLE" || neighbour_errno(err)) {
      return "the peer's RDMA connection manager did not answer: RoCE (UDP 4791) blocked or "
             "dropped on the way, or the GIDs are of different types";
    }
    return "";
  case RdmaStep::kAccept:
    if (err == ETIMEDOUT) {
      return "the client's connection request never arrived over RDMA, although the "
             "out-of-band channel works: RoCE (UDP 4791) is blocked or the client picked a "
             "device on another network";
    }
    return "";
  case RdmaStep::kDataPhase:
    if (f.wc_status) return wc_cause(*f.wc_status, f);
    if (f.stalled) {
      return "no completion for " + (f.timeout_text.empty() ? "the timeout" : f.timeout_text) +
             ": the peer vanished or the fabric drops packets (check PFC/ECN, the GIDs and the "
             "route)";
    }
    return "";
  }
  return "";
}

Error triage_error(RdmaStep step, std::string operation, int err, const TriageFacts& facts) {
  ErrorCode code = ErrorCode::kSystem;
  if (err == EPERM || err == EACCES) code = ErrorCode::kPermission;
  if (err == ETIMEDOUT || facts.stalled) code = ErrorCode::kTimeout;
  std::string detail;
  if (err != 0) detail = errno_text(err);
  if (facts.wc_status) {
    detail = std::string(wc_status_text(*facts.wc_status)) + " (status " +
             std::to_string(*facts.wc_status) + ")";
  }
  if (!facts.cm_event.empty()) {
    detail += (detail.empty() ? "" : ", ") + facts.cm_event +
              (facts.cm_status != 0 ? " status " + std::to_string(facts.cm_status) : "");
  }
  Error e(code, std::move(operation), std::move(detail));
  e.with_context(std::string(rdma_step_name(step)));
  std::string cause = likely_cause(step, err, facts);
  if (!cause.empty()) e.with_hint("likely cause: " + cause);
  return e;
}

} // namespace fabric::probes
