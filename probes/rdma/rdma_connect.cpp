#include "probes/rdma/rdma_connect.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "common/rdma_device.h"
#include "common/resolve.h"

namespace fabric::probes {

int mtu_enum(uint32_t bytes) {
  switch (bytes) {
  case 256: return IBV_MTU_256;
  case 512: return IBV_MTU_512;
  case 1024: return IBV_MTU_1024;
  case 2048: return IBV_MTU_2048;
  default: return IBV_MTU_4096;
  }
}

uint32_t random_psn() {
  static thread_local std::mt19937 gen{std::random_device{}()};
  return gen() & 0xffffff;
}

std::string tcp_peer_ipv4(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  char text[INET_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text);
    return text;
  }
  if (ss.ss_family == AF_INET6) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
      inet_ntop(AF_INET, &sin6->sin6_addr.s6_addr[12], text, sizeof text);
      return text;
    }
  }
  return "";
}

Result<std::string> resolve_ipv4(const std::string& host, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  auto found = resolve_address(host, "", hints, timeout);
  if (!found.ok()) {
    if (found.error().code() == ErrorCode::kTimeout) return found.error();
    return Error(ErrorCode::kNotFound, "resolving " + host,
                 "no IPv4 address: " + found.error().detail())
        .with_hint("RoCE v2 GIDs are chosen by IPv4 address: give the peer's IPv4 address");
  }
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>((*found)->ai_addr)->sin_addr, text,
            sizeof text);
  return std::string(text);
}

Result<GidChoice> choose_local_gid(const SysfsReader& sysfs,
                                   const std::optional<std::string>& device, uint32_t port,
                                   std::optional<uint32_t> gid_index,
                                   const std::string& peer_ipv4) {
  std::optional<LocalRoute> route;
  if (!peer_ipv4.empty()) {
    FABRIC_ASSIGN_OR_RETURN(route, local_route_to(peer_ipv4));
  }
  GidChoice choice;
  if (gid_index) {
    std::string dev;
    uint32_t dev_port = port;
    if (device) {
      dev = *device;
    } else if (route) {
      // No --device: the device serving the netdev that reaches the peer.
      FABRIC_ASSIGN_OR_RETURN(RdmaPort p, rdma_port_for_netdev(sysfs, route->netdev));
      dev = p.device;
      dev_port = p.port;
    } else {
      return Error(ErrorCode::kInvalidArgument, "--gid-index",
                   "needs --device when the peer's address is unknown");
    }
    FABRIC_ASSIGN_OR_RETURN(choice, gid_by_index(sysfs, dev, dev_port, *gid_index));
  } else {
    if (!route) {
      return Error(ErrorCode::kInvalidArgument, "choosing a GID",
                   "the peer's IPv4 address is unknown");
    }
    auto chosen = choose_gid(sysfs, route->local_ipv4, route->netdev, device);
    // Its error names this side's address and netdev already; the peer only when it differs
    // (on loopback they are the same, and the sentence would be said twice).
    if (!chosen.ok() && route->local_ipv4 != peer_ipv4) {
      return std::move(chosen).error().with_context("reaching " + peer_ipv4);
    }
    FABRIC_ASSIGN_OR_RETURN(choice, std::move(chosen));
  }
  choice.peer_ipv4 = peer_ipv4;
  return choice;
}

Result<void> agree_on_gids(const GidChoice& local, const GidChoice& remote) {
  auto agreed = check_gid_agreement(local, remote);
  if (agreed.ok()) return Ok();
  const Error& e = agreed.error();
  Error out(ErrorCode::kSystem, e.operation(), e.detail());
  if (!e.hint().empty()) out.with_hint(e.hint());
  return out;
}

Result<void> check_path_mtu(const RdmaEndpoint& local, const RdmaEndpoint& remote, uint32_t mtu) {
  if (mtu <= local.active_mtu && mtu <= remote.active_mtu) return Ok();
  TriageFacts facts;
  facts.local_active_mtu = local.active_mtu;
  facts.remote_active_mtu = remote.active_mtu;
  facts.path_mtu = mtu;
  const bool here = mtu > local.active_mtu;
  const RdmaEndpoint& small = here ? local : remote;
  return Error(ErrorCode::kSystem, "path MTU " + std::to_string(mtu),
               "larger than the active MTU " + std::to_string(small.active_mtu) + " of " +
                   small.gid.rdma_device + " port " + std::to_string(small.gid.port) +
                   (here ? " (this side)" : " (the agent's side)"))
      .with_hint("likely cause: " + likely_cause(RdmaStep::kModifyToRtr, 0, facts));
}

RdmaEndpoint describe_endpoint(const RdmaResources& r, const GidChoice& gid,
                               std::optional<uint32_t> mtu_request,
                               const std::vector<uint32_t>& psns) {
  RdmaEndpoint e;
  e.gid = gid;
  e.lid = r.port_attr().lid;
  e.active_mtu = rdma::mtu_enum_to_bytes(r.port_attr().active_mtu);
  e.mtu = mtu_request.value_or(0);
  e.max_rd_atomic = r.max_rd_atomic();
  e.rkey = r.rkey();
  e.region_bytes = r.region_bytes();
  e.max_inline = r.max_inline();
  e.gpu_memory = r.gpu_memory();
  // With librdmacm the agent describes its buffers before its QPs exist (qpn 0).
  for (std::size_t i = 0; i < r.spec().qps; ++i) {
    QpInfo q;
    q.qpn = i < r.qp_count() ? r.qp(i)->qp_num : 0;
    q.psn = i < psns.size() ? psns[i] : 0;
    q.addr = r.address(r.remote_half(i));
    e.qps.push_back(q);
  }
  return e;
}

Result<void> connect_queue_pairs(RdmaResources& r, const RdmaEndpoint& local,
                                 const RdmaEndpoint& remote, const PathSettings& path) {
  TriageFacts facts;
  facts.device = r.device_name();
  facts.port = r.port();
  facts.netdev = local.gid.netdev;
  facts.peer_ipv4 = local.gid.peer_ipv4.empty() ? remote.gid.ipv4 : local.gid.peer_ipv4;
  facts.local_gid_type = local.gid.type;
  facts.remote_gid_type = remote.gid.type;
  facts.local_gid = local.gid.gid;
  facts.remote_gid = remote.gid.gid;
  facts.local_gid_index = local.gid.gid_index;
  facts.local_active_mtu = local.active_mtu;
  facts.remote_active_mtu = remote.active_mtu;
  facts.path_mtu = path.mtu;

  ibv_gid dgid{};
  if (!rdma::parse_gid(remote.gid.gid, dgid.raw)) {
    return Error(ErrorCode::kDecode, "peer GID", "'" + remote.gid.gid + "' is not a GID");
  }
  const uint8_t rd_atomic =
      static_cast<uint8_t>(std::min({r.max_rd_atomic(), remote.max_rd_atomic, 255u}));
  for (std::size_t i = 0; i < r.qp_count(); ++i) {
    ibv_qp* qp = r.qp(i);
    const std::string which = "QP " + std::to_string(qp->qp_num);

    ibv_qp_attr init{};
    init.qp_state = IBV_QPS_INIT;
    init.pkey_index = 0;
    init.port_num = static_cast<uint8_t>(r.port());
    init.qp_access_flags =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (int rc = ibv_modify_qp(
            qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
        rc != 0) {
      return triage_error(RdmaStep::kModifyToInit, "ibv_modify_qp " + which, rc, facts);
    }

    ibv_qp_attr rtr{};
    rtr.qp_state = IBV_QPS_RTR;
    rtr.path_mtu = static_cast<ibv_mtu>(mtu_enum(path.mtu));
    rtr.dest_qp_num = remote.qps[i].qpn;
    rtr.rq_psn = remote.qps[i].psn;
    // Reads the peer may have in flight against us; it asks for at most its own limit.
    rtr.max_dest_rd_atomic = rd_atomic;
    rtr.min_rnr_timer = kQpMinRnrTimer;
    rtr.ah_attr.is_global = 1;
    rtr.ah_attr.grh.dgid = dgid;
    rtr.ah_attr.grh.sgid_index = static_cast<uint8_t>(local.gid.gid_index);
    rtr.ah_attr.grh.hop_limit = kHopLimit;
    rtr.ah_attr.grh.traffic_class = path.traffic_class;
    rtr.ah_attr.dlid = static_cast<uint16_t>(remote.lid);
    rtr.ah_attr.sl = path.sl;
    rtr.ah_attr.port_num = static_cast<uint8_t>(r.port());
    if (int rc =
            ibv_modify_qp(qp, &rtr,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
        rc != 0) {
      return triage_error(RdmaStep::kModifyToRtr, "ibv_modify_qp " + which, rc, facts);
    }

    ibv_qp_attr rts{};
    rts.qp_state = IBV_QPS_RTS;
    rts.timeout = kQpTimeout;
    rts.retry_cnt = kQpRetryCount;
    rts.rnr_retry = kQpRnrRetry;
    rts.sq_psn = local.qps[i].psn;
    rts.max_rd_atomic = rd_atomic;
    if (int rc = ibv_modify_qp(qp, &rts,
                               IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
        rc != 0) {
      return triage_error(RdmaStep::kModifyToRts, "ibv_modify_qp " + which, rc, facts);
    }
  }
  return Ok();
}

} // namespace fabric::probes
