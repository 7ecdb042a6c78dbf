#include "probes/rdma/rdma_cm_connect.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/rdma_device.h"
#include "probes/rdma/rdma_clock.h"
#include "probes/rdma/rdma_connect.h"

namespace fabric::probes {
namespace {

Result<sockaddr_in> ipv4_address(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
    return Error(ErrorCode::kInvalidArgument, "address '" + ip + "'", "not an IPv4 address");
  }
  return a;
}

int errno_or(int fallback) {
  return errno != 0 ? errno : fallback;
}

} // namespace

CmConnection::~CmConnection() {
  for (rdma_cm_id* id : ids_) {
    if (id->qp != nullptr) {
      rdma_disconnect(id);
      rdma_destroy_qp(id);
    }
  }
  resources_.reset();
  for (rdma_cm_id* id : ids_)
    rdma_destroy_id(id);
  if (listen_id_ != nullptr) rdma_destroy_id(listen_id_);
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
}

Result<rdma_cm_event*> CmConnection::next_event(int64_t wait_ms) {
  pollfd p{channel_->fd, POLLIN, 0};
  int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(wait_ms, 1000)));
  if (n < 0 && errno != EINTR) return Error::from_errno(errno, "poll", "RDMA CM event channel");
  if (n <= 0) return static_cast<rdma_cm_event*>(nullptr);
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(channel_, &event) != 0) {
    if (errno == EAGAIN || errno == EINTR) return static_cast<rdma_cm_event*>(nullptr);
    return Error::from_errno(errno, "rdma_get_cm_event");
  }
  return event;
}

Result<rdma_cm_event*> CmConnection::wait_event(rdma_cm_event_type expected, int64_t deadline_ns,
                                                RdmaStep step) {
  TriageFacts facts;
  facts.peer_ipv4 = peer_ipv4_;
  for (;;) {
    int64_t left_ms = (deadline_ns - now_ns()) / 1000000;
    if (left_ms <= 0) {
      return triage_error(step, std::string("waiting for ") + rdma_event_str(expected), ETIMEDOUT,
                          facts);
    }
    FABRIC_ASSIGN_OR_RETURN(rdma_cm_event * event, next_event(left_ms));
    if (event == nullptr) continue;
    if (event->event == expected && event->status == 0) return event;
    facts.cm_event = rdma_event_str(event->event);
    facts.cm_status = event->status;
    // A negative status is an errno (address and route resolution); positive ones are
    // the CM's reject reasons.
    int err = event->status < 0 ? -event->status : 0;
    rdma_ack_cm_event(event);
    return triage_error(step, std::string("waiting for ") + rdma_event_str(expected), err, facts);
  }
}

Result<void> CmConnection::add_qp(rdma_cm_id* id) {
  if (id->verbs != resources_->context()) {
    return Error(ErrorCode::kUnsupported, "librdmacm",
                 "the connections of one test resolved to different RDMA devices");
  }
  ibv_qp_init_attr attr = resources_->qp_init_attr();
  if (resources_->qp_count() > 0) attr.cap.max_inline_data = resources_->max_inline();
  errno = 0;
  if (rdma_create_qp(id, resources_->pd(), &attr) != 0) {
    if (resources_->qp_count() == 0 && attr.cap.max_inline_data > 0) {
      // Without inline data, as RdmaResources::create_qps() does.
      attr = resources_->qp_init_attr();
      attr.cap.max_inline_data = 0;
      errno = 0;
      if (rdma_create_qp(id, resources_->pd(), &attr) == 0) {
        resources_->adopt_qp(id->qp, 0);
        return Ok();
      }
    }
    TriageFacts facts;
    facts.device = resources_->device_name();
    return triage_error(RdmaStep::kCreateQp, "rdma_create_qp", errno_or(ENOMEM), facts);
  }
  resources_->adopt_qp(id->qp, attr.cap.max_inline_data);
  return Ok();
}

Result<std::unique_ptr<CmConnection>> CmConnection::connect(const std::string& server_ipv4,
                                                            uint16_t cm_port,
                                                            const ResourceSpec& spec, uint8_t tos,
                                                            std::chrono::milliseconds timeout) {
  std::unique_ptr<CmConnection> c(new CmConnection());
  c->peer_ipv4_ = server_ipv4;
  c->tos_ = tos;
  FABRIC_ASSIGN_OR_RETURN(sockaddr_in dst, ipv4_address(server_ipv4, cm_port));
  errno = 0;
  c->channel_ = rdma_create_event_channel();
  if (c->channel_ == nullptr) {
    return Error::from_errno(errno_or(ENODEV), "rdma_create_event_channel")
        .with_hint("is the rdma_ucm module loaded (/dev/infiniband/rdma_cm)?");
  }
  if (fcntl(c->channel_->fd, F_SETFL, fcntl(c->channel_->fd, F_GETFL) | O_NONBLOCK) != 0) {
    return Error::from_errno(errno, "fcntl O_NONBLOCK", "RDMA CM event channel");
  }
  const int timeout_ms = static_cast<int>(timeout.count());
  for (uint32_t i = 0; i < spec.qps; ++i) {
    const int64_t deadline = now_ns() + std::chrono::nanoseconds(timeout).count();
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(c->channel_, &id, nullptr, RDMA_PS_TCP) != 0) {
      return Error::from_errno(errno, "rdma_create_id");
    }
    c->ids_.push_back(id);
    if (tos != 0 &&
        rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &c->tos_, sizeof c->tos_) != 0) {
      return Error::from_errno(errno, "rdma_set_option TOS");
    }
    TriageFacts facts;
    facts.peer_ipv4 = server_ipv4;
    if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), timeout_ms) != 0) {
      return triage_error(RdmaStep::kResolveAddress, "rdma_resolve_addr " + server_ipv4, errno,
                          facts);
    }
    FABRIC_ASSIGN_OR_RETURN(rdma_cm_event * ev, c->wait_event(RDMA_CM_EVENT_ADDR_RESOLVED, deadline,
                                                              RdmaStep::kResolveAddress));
    rdma_ack_cm_event(ev);
    if (rdma_resolve_route(id, timeout_ms) != 0) {
      return triage_error(RdmaStep::kResolveRoute, "rdma_resolve_route " + server_ipv4, errno,
                          facts);
    }
    FABRIC_ASSIGN_OR_RETURN(
        ev, c->wait_event(RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, RdmaStep::kResolveRoute));
    rdma_ack_cm_event(ev);
    if (i == 0) {
      FABRIC_ASSIGN_OR_RETURN(c->resources_,
                              RdmaResources::on_context(id->verbs, id->port_num, spec));
    }
    FABRIC_TRY(c->add_qp(id));
    rdma_conn_param param{};
    const auto depth =
        static_cast<uint8_t>(std::min<uint32_t>(c->resources_->max_rd_atomic(), 255));
    param.initiator_depth = depth;
    param.responder_resources = depth;
    param.retry_count = kQpRetryCount;
    param.rnr_retry_count = kQpRnrRetry;
    uint32_t index = htonl(i);
    param.private_data = &index;
    param.private_data_len = sizeof index;
    if (rdma_connect(id, &param) != 0) {
      return triage_error(RdmaStep::kConnect, "rdma_connect", errno, facts);
    }
    FABRIC_ASSIGN_OR_RETURN(ev,
                            c->wait_event(RDMA_CM_EVENT_ESTABLISHED, deadline, RdmaStep::kConnect));
    rdma_ack_cm_event(ev);
  }
  return c;
}

Result<std::unique_ptr<CmConnection>> CmConnection::listen(const std::string& local_ipv4,
                                                           const ResourceSpec& spec, uint8_t tos) {
  std::unique_ptr<CmConnection> c(new CmConnection());
  c->tos_ = tos;
  FABRIC_ASSIGN_OR_RETURN(sockaddr_in local, ipv4_address(local_ipv4, 0));
  errno = 0;
  c->channel_ = rdma_create_event_channel();
  if (c->channel_ == nullptr) {
    return Error::from_errno(errno_or(ENODEV), "rdma_create_event_channel")
        .with_hint("is the rdma_ucm module loaded (/dev/infiniband/rdma_cm)?");
  }
  if (fcntl(c->channel_->fd, F_SETFL, fcntl(c->channel_->fd, F_GETFL) | O_NONBLOCK) != 0) {
    return Error::from_errno(errno, "fcntl O_NONBLOCK", "RDMA CM event channel");
  }
  if (rdma_create_id(c->channel_, &c->listen_id_, nullptr, RDMA_PS_TCP) != 0) {
    return Error::from_errno(errno, "rdma_create_id");
  }
  if (tos != 0 && rdma_set_option(c->listen_id_, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &c->tos_,
                                  sizeof c->tos_) != 0) {
    return Error::from_errno(errno, "rdma_set_option TOS");
  }
  if (rdma_bind_addr(c->listen_id_, reinterpret_cast<sockaddr*>(&local)) != 0) {
    return Error::from_errno(errno, "rdma_bind_addr " + local_ipv4);
  }
  // Binding to an address ties the id to the RDMA device that owns it.
  if (c->listen_id_->verbs == nullptr) {
    return Error(ErrorCode::kNotFound, "rdma_bind_addr " + local_ipv4,
                 "no RDMA device owns this address (no GID for it)")
        .with_hint("the agent must be reached at an address on its RoCE netdev");
  }
  if (rdma_listen(c->listen_id_, static_cast<int>(spec.qps)) != 0) {
    return Error::from_errno(errno, "rdma_listen");
  }
  FABRIC_ASSIGN_OR_RETURN(c->resources_, RdmaResources::on_context(c->listen_id_->verbs,
                                                                   c->listen_id_->port_num, spec));
  return c;
}

uint16_t CmConnection::listen_port() const {
  return listen_id_ != nullptr ? ntohs(rdma_get_src_port(listen_id_)) : 0;
}

Result<void> CmConnection::accept_all(std::chrono::milliseconds timeout) {
  const uint32_t want = resources_->spec().qps;
  const int64_t deadline = now_ns() + std::chrono::nanoseconds(timeout).count();
  uint32_t established = 0;
  TriageFacts facts;
  facts.device = resources_->device_name();
  while (established < want) {
    int64_t left_ms = (deadline - now_ns()) / 1000000;
    if (left_ms <= 0) {
      return triage_error(RdmaStep::kAccept,
                          "waiting for " + std::to_string(want - established) +
                              " connection(s) from the client",
                          ETIMEDOUT, facts);
    }
    FABRIC_ASSIGN_OR_RETURN(rdma_cm_event * event, next_event(left_ms));
    if (event == nullptr) continue;
    if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
      rdma_cm_id* id = event->id;
      rdma_conn_param theirs = event->param.conn;
      uint32_t index = UINT32_MAX;
      if (theirs.private_data_len >= sizeof index) {
        std::memcpy(&index, theirs.private_data, sizeof index);
        index = ntohl(index);
      }
      rdma_ack_cm_event(event);
      ids_.push_back(id);
      if (index != ids_.size() - 1) {
        return Error(ErrorCode::kDecode, "connection request",
                     "QP index " + std::to_string(index) + " arrived as connection " +
                         std::to_string(ids_.size() - 1));
      }
      FABRIC_TRY(add_qp(id));
      rdma_conn_param param{};
      const uint32_t depth = std::min<uint32_t>(resources_->max_rd_atomic(), 255);
      param.responder_resources =
          static_cast<uint8_t>(std::min<uint32_t>(depth, theirs.initiator_depth));
      param.initiator_depth =
          static_cast<uint8_t>(std::min<uint32_t>(depth, theirs.responder_resources));
      param.retry_count = kQpRetryCount;
      param.rnr_retry_count = kQpRnrRetry;
      if (rdma_accept(id, &param) != 0) {
        return triage_error(RdmaStep::kAccept, "rdma_accept", errno, facts);
      }
    } else if (event->event == RDMA_CM_EVENT_ESTABLISHED) {
      rdma_ack_cm_event(event);
      ++established;
    } else {
      facts.cm_event = rdma_event_str(event->event);
      facts.cm_status = event->status;
      rdma_ack_cm_event(event);
      return triage_error(RdmaStep::kAccept, "waiting for connections", 0, facts);
    }
  }
  return Ok();
}

Result<CmPath> CmConnection::path() const {
  if (resources_->qp_count() == 0) {
    return Error(ErrorCode::kInternal, "librdmacm path", "no QP connected");
  }
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (int rc = ibv_query_qp(resources_->qp(0), &attr, IBV_QP_AV | IBV_QP_PATH_MTU, &init);
      rc != 0) {
    return Error::from_errno(rc, "ibv_query_qp");
  }
  CmPath p;
  p.sgid_index = attr.ah_attr.grh.sgid_index;
  p.mtu = rdma::mtu_enum_to_bytes(attr.path_mtu);
  return p;
}

} // namespace fabric::probes
