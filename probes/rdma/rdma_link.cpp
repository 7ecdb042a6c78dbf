#include "probes/rdma/rdma_link.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/json.h"
#include "common/rdma_device.h"
#include "probes/agent/protocol.h"
#include "probes/rdma/rdma_bw.h"
#include "probes/rdma/rdma_connect.h"
#include "probes/rdma/rdma_lat.h"

namespace fabric::probes {
namespace {

// Inline data asked for: enough for perftest's default latency message and small sweeps.
constexpr uint32_t kBwInline = 128;
constexpr uint32_t kLatInline = 220;
// Receives kept posted per QP for the send bandwidth test (perftest's rx-depth).
constexpr uint32_t kBwRecvDepth = 512;

std::vector<uint32_t> make_psns(std::size_t n) {
  std::vector<uint32_t> psns(n);
  for (auto& p : psns)
    p = random_psn();
  return psns;
}

RdmaSideInfo side_info(const RdmaEndpoint& e, std::optional<GpuRegistration> registration) {
  RdmaSideInfo s;
  s.gid = e.gid;
  s.active_mtu = e.active_mtu;
  s.gpu_memory = e.gpu_memory;
  if (registration) s.gpu_registration = std::string(gpu_registration_name(*registration));
  return s;
}

void fill_info(RdmaLink& link, const RdmaOptions& o, const char* method, uint32_t mtu) {
  link.info.method = method;
  link.info.mtu = mtu;
  link.info.traffic_class = o.traffic_class;
  link.info.sl = o.sl;
  link.info.max_inline = link.resources->max_inline();
  link.info.local = side_info(link.local, link.resources->gpu_registration());
  link.info.remote = side_info(link.remote, std::nullopt);
}

// The GID librdmacm used, described like one this side would have chosen.
GidChoice cm_gid(const RdmaResources& r, uint32_t sgid_index, const std::string& peer_ipv4) {
  auto described = gid_by_index(SysfsReader(), r.device_name(), r.port(), sgid_index);
  GidChoice gid;
  if (described.ok()) {
    gid = *described;
  } else {
    gid.rdma_device = r.device_name();
    gid.port = r.port();
    gid.gid_index = sgid_index;
    ibv_gid raw{};
    if (ibv_query_gid(r.context(), static_cast<uint8_t>(r.port()), static_cast<int>(sgid_index),
                      &raw) == 0) {
      gid.gid = rdma::gid_to_string(raw.raw);
      gid.ipv4 = rdma::ipv4_of_gid(raw.raw).value_or("");
    }
    gid.type = rdma::GidType::kRoceV2;
  }
  gid.reason = "chosen by librdmacm";
  gid.peer_ipv4 = peer_ipv4;
  return gid;
}

Result<void> prime_receives(RdmaLink& link) {
  uint32_t depth = link.resources->spec().recv_depth;
  if (depth == 0) return Ok();
  return link.receives.prime(*link.resources, depth);
}

// The peer's endpoint message, checked against this test: a peer whose buffers cannot
// hold the largest message would fail mid-run with a remote access error instead.
Result<RdmaEndpoint> receive_endpoint(Channel& channel, const RdmaOptions& o) {
  FABRIC_ASSIGN_OR_RETURN(auto msg, expect_message(channel, kMsgEndpoint, o.timeout));
  FABRIC_ASSIGN_OR_RETURN(RdmaEndpoint remote, decode_endpoint(msg, o.qps));
  if (remote.region_bytes < o.max_size()) {
    return Error(ErrorCode::kPeerIncompatible, "endpoint.region_bytes",
                 "the peer's buffers hold " + std::to_string(remote.region_bytes) +
                     " bytes per message, the test sends " + std::to_string(o.max_size()));
  }
  return remote;
}

} // namespace

ResourceSpec resource_spec(const RdmaOptions& o) {
  ResourceSpec spec;
  spec.qps = o.qps;
  spec.max_message = o.max_size();
  spec.gpu = o.gpu;
  if (o.test == RdmaTest::kBandwidth) {
    spec.send_depth = o.tx_depth;
    // As deep as the sender's window, so that a full window never meets an empty receive
    // queue (each RNR NAK backs the sender off for a while).
    spec.recv_depth = o.op == RdmaOp::kSend ? std::max(kBwRecvDepth, o.tx_depth) : 0;
    spec.max_inline = kBwInline;
  } else {
    spec.send_depth = kLatSendDepth;
    spec.recv_depth = o.op == RdmaOp::kSend ? kLatRecvDepth : 0;
    spec.max_inline = kLatInline;
  }
  return spec;
}

std::chrono::milliseconds phase_bound(const RdmaOptions& o, uint64_t size) {
  double seconds = std::chrono::duration<double>(o.timeout).count();
  if (o.duration) {
    seconds += std::chrono::duration<double>(*o.duration).count();
  } else {
    // Small messages are bound by their round trips, not their bytes (a soft-RoCE read
    // takes tens of microseconds): at least 100 us each.
    double messages = static_cast<double>(o.iters) * o.qps * (o.bidir ? 2 : 1);
    seconds += messages * std::max(static_cast<double>(size) / 1e6, 1e-4);
  }
  seconds = std::min(seconds, 86400.0 * 2);
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::optional<CounterSnapshot> snapshot_counters(const RdmaLink& link) {
  SysfsReader sysfs;
  const RdmaResources& r = *link.resources;
  auto snap = read_counters(sysfs, r.device_name(), r.port(), link.local.gid.netdev);
  if (!snap.ok()) {
    // The GID's netdev may live in another namespace (a pod's); the RDMA counters still
    // can be read without it.
    snap = read_counters(sysfs, r.device_name(), r.port(), "");
  }
  if (!snap.ok()) {
    spdlog::debug("counters of {} port {}: {}", r.device_name(), r.port(), snap.error().message());
    return std::nullopt;
  }
  return std::move(*snap);
}

Result<std::unique_ptr<RdmaLink>> connect_client_link(Channel& channel, const RdmaOptions& o) {
  FABRIC_ASSIGN_OR_RETURN(std::string peer, resolve_ipv4(o.host, o.timeout));
  auto link = std::make_unique<RdmaLink>();
  const ResourceSpec spec = resource_spec(o);
  if (!o.use_cm) {
    FABRIC_ASSIGN_OR_RETURN(
        GidChoice gid, choose_local_gid(SysfsReader(), o.device, o.ib_port, o.gid_index, peer));
    FABRIC_ASSIGN_OR_RETURN(link->owned, RdmaResources::open(gid.rdma_device, gid.port, spec));
    link->resources = link->owned.get();
    FABRIC_TRY(link->resources->create_qps());
    link->local = describe_endpoint(*link->resources, gid, o.mtu, make_psns(o.qps));
    FABRIC_TRY(channel.send(encode_endpoint(link->local), o.timeout));
    FABRIC_ASSIGN_OR_RETURN(link->remote, receive_endpoint(channel, o));
    FABRIC_TRY(agree_on_gids(link->local.gid, link->remote.gid));
    PathSettings path{agreed_mtu(link->local, link->remote), o.traffic_class, o.sl};
    FABRIC_TRY(check_path_mtu(link->local, link->remote, path.mtu));
    FABRIC_TRY(connect_queue_pairs(*link->resources, link->local, link->remote, path));
    fill_info(*link, o, "oob", path.mtu);
  } else {
    FABRIC_ASSIGN_OR_RETURN(LocalRoute route, local_route_to(peer));
    json::Writer w(false);
    w.begin_object().field("type", kMsgCmRequest).field("client_ipv4", route.local_ipv4);
    w.end_object();
    FABRIC_TRY(channel.send(w.str(), o.timeout));
    FABRIC_ASSIGN_OR_RETURN(link->remote, receive_endpoint(channel, o));
    if (link->remote.cm_port == 0) {
      return Error(ErrorCode::kDecode, "endpoint.cm_port", "the agent sent no librdmacm port");
    }
    FABRIC_ASSIGN_OR_RETURN(link->cm, CmConnection::connect(peer, link->remote.cm_port, spec,
                                                            o.traffic_class, o.timeout));
    link->resources = &link->cm->resources();
    FABRIC_ASSIGN_OR_RETURN(CmPath path, link->cm->path());
    link->local =
        describe_endpoint(*link->resources, cm_gid(*link->resources, path.sgid_index, peer),
                          std::nullopt, std::vector<uint32_t>(o.qps, 0));
    FABRIC_TRY(channel.send(encode_endpoint(link->local), o.timeout));
    fill_info(*link, o, "rdma_cm", path.mtu);
  }
  FABRIC_TRY(prime_receives(*link));
  return link;
}

Result<std::unique_ptr<RdmaLink>> accept_server_link(Channel& channel, const RdmaOptions& o) {
  auto link = std::make_unique<RdmaLink>();
  ResourceSpec spec = resource_spec(o);
  spec.gpu.reset(); // --gpu is the client's; the agent's buffers are in host memory
  const RdmaServerView view = server_view(o);
  std::string peer = tcp_peer_ipv4(channel.fd());
  if (!o.use_cm) {
    FABRIC_ASSIGN_OR_RETURN(link->remote, receive_endpoint(channel, o));
    if (peer.empty()) peer = link->remote.gid.ipv4;
    // Without the client's address (a forced non-IPv4 GID over a local socket), the GID
    // of the address the client aimed at is ours.
    const std::string route_to = peer.empty() ? link->remote.gid.peer_ipv4 : peer;
    FABRIC_ASSIGN_OR_RETURN(
        GidChoice gid, choose_local_gid(SysfsReader(), view.device, 1, view.gid_index, route_to));
    if (peer.empty()) gid.peer_ipv4.clear();
    FABRIC_ASSIGN_OR_RETURN(link->owned, RdmaResources::open(gid.rdma_device, gid.port, spec));
    link->resources = link->owned.get();
    FABRIC_TRY(link->resources->create_qps());
    link->local = describe_endpoint(*link->resources, gid, o.mtu, make_psns(o.qps));
    // Disagreeing GIDs or MTUs: the client still gets this side's endpoint, so that its
    // own check explains the problem from its point of view, before this side gives up.
    PathSettings path{agreed_mtu(link->local, link->remote), o.traffic_class, o.sl};
    auto agreed = agree_on_gids(link->local.gid, link->remote.gid);
    if (agreed.ok()) agreed = check_path_mtu(link->local, link->remote, path.mtu);
    if (agreed.ok()) {
      FABRIC_TRY(connect_queue_pairs(*link->resources, link->local, link->remote, path));
      FABRIC_TRY(prime_receives(*link));
    }
    FABRIC_TRY(channel.send(encode_endpoint(link->local), o.timeout));
    FABRIC_TRY(std::move(agreed));
    fill_info(*link, o, "oob", path.mtu);
    return link;
  }
  FABRIC_ASSIGN_OR_RETURN(auto request, expect_message(channel, kMsgCmRequest, o.timeout));
  FABRIC_ASSIGN_OR_RETURN(auto client_ipv4, json::get_optional_string(request, "", "client_ipv4"));
  if (peer.empty()) peer = client_ipv4.value_or("");
  if (peer.empty()) {
    return Error(ErrorCode::kDecode, "rdma_cm_request", "the client's address is unknown");
  }
  FABRIC_ASSIGN_OR_RETURN(LocalRoute route, local_route_to(peer));
  FABRIC_ASSIGN_OR_RETURN(link->cm, CmConnection::listen(route.local_ipv4, spec, o.traffic_class));
  link->resources = &link->cm->resources();
  // The GID is the CM's business; until it picked one, describe the address's.
  GidChoice gid;
  auto chosen = choose_local_gid(SysfsReader(), link->resources->device_name(),
                                 link->resources->port(), std::nullopt, peer);
  if (chosen.ok()) {
    gid = *chosen;
  } else {
    gid.rdma_device = link->resources->device_name();
    gid.port = link->resources->port();
    gid.gid = "::";
    gid.type = rdma::GidType::kRoceV2;
  }
  link->local =
      describe_endpoint(*link->resources, gid, std::nullopt, std::vector<uint32_t>(o.qps, 0));
  link->local.cm_port = link->cm->listen_port();
  FABRIC_TRY(channel.send(encode_endpoint(link->local), o.timeout));
  FABRIC_TRY(link->cm->accept_all(o.timeout));
  FABRIC_ASSIGN_OR_RETURN(CmPath path, link->cm->path());
  link->local.gid = cm_gid(*link->resources, path.sgid_index, peer);
  FABRIC_TRY(prime_receives(*link));
  FABRIC_ASSIGN_OR_RETURN(link->remote, receive_endpoint(channel, o));
  fill_info(*link, o, "rdma_cm", path.mtu);
  return link;
}

} // namespace fabric::probes
