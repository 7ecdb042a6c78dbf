#include "probes/rdma/rdma_resources.h"

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/rdma_device.h"

namespace fabric::probes {
namespace {

constexpr uint64_t kPage = 4096;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

void free_host(uint8_t* p) {
  std::free(p);
}

} // namespace

std::optional<uint64_t> memlock_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<uint64_t>(lim.rlim_cur);
}

Result<std::unique_ptr<RdmaResources>> RdmaResources::open(const std::string& device, uint32_t port,
                                                           const ResourceSpec& spec) {
  FABRIC_ASSIGN_OR_RETURN(auto list, verbs::DeviceList::get());
  FABRIC_ASSIGN_OR_RETURN(ibv_device * dev, list.find(device));
  std::unique_ptr<RdmaResources> r(new RdmaResources());
  auto context = verbs::open_device(dev);
  if (!context.ok()) {
    TriageFacts facts;
    facts.device = device;
    return triage_error(RdmaStep::kOpenDevice, "ibv_open_device " + device,
                        context.error().sys_errno(), facts);
  }
  r->owned_context_ = std::move(*context);
  r->context_ = r->owned_context_.get();
  FABRIC_TRY(r->allocate(port, spec));
  return r;
}

Result<std::unique_ptr<RdmaResources>>
RdmaResources::on_context(ibv_context* context, uint32_t port, const ResourceSpec& spec) {
  std::unique_ptr<RdmaResources> r(new RdmaResources());
  r->context_ = context;
  FABRIC_TRY(r->allocate(port, spec));
  return r;
}

RdmaResources::~RdmaResources() = default;

Result<void> RdmaResources::allocate(uint32_t port, const ResourceSpec& spec) {
  spec_ = spec;
  port_ = port;
  device_name_ = ibv_get_device_name(context_->device);
  FABRIC_ASSIGN_OR_RETURN(device_attr_, verbs::query_device(context_));
  if (port < 1 || port > device_attr_.phys_port_cnt) {
    return Error(ErrorCode::kNotFound, "--ib-port " + std::to_string(port),
                 device_name_ + " has " + std::to_string(device_attr_.phys_port_cnt) + " port(s)");
  }
  FABRIC_ASSIGN_OR_RETURN(port_attr_, verbs::query_port(context_, static_cast<uint8_t>(port)));
  if (port_attr_.state != IBV_PORT_ACTIVE) {
    return Error(ErrorCode::kUnsupported, device_name_ + " port " + std::to_string(port),
                 "is " + rdma::port_state_name(port_attr_.state) + ", not ACTIVE")
        .with_hint("bring the netdev up (`ip link set DEV up`) and check the cable/link");
  }
  FABRIC_ASSIGN_OR_RETURN(pd_, verbs::alloc_pd(context_));

  const int max_cqe = std::max(1, device_attr_.max_cqe);
  auto cq_entries = [&](uint64_t want) {
    return static_cast<int>(std::min<uint64_t>(std::max<uint64_t>(want, 1), max_cqe));
  };
  // Every posted receive completes into the one receive CQ: never post more than it holds
  // (rxe's 32767 entries are fewer than 64 QPs x 512). The send CQ may be clamped: only
  // every signal_interval()-th send completes into it.
  if (spec_.recv_depth > 0) {
    const uint64_t per_qp = static_cast<uint64_t>(max_cqe - 1) / std::max<uint32_t>(spec_.qps, 1);
    spec_.recv_depth = static_cast<uint32_t>(std::min<uint64_t>(
        {spec_.recv_depth, per_qp, static_cast<uint64_t>(std::max(device_attr_.max_qp_wr, 1))}));
    if (spec_.recv_depth == 0) {
      return Error(ErrorCode::kUnsupported, device_name_,
                   "its completion queues (" + std::to_string(max_cqe) +
                       " entries) cannot take a receive for each of " + std::to_string(spec_.qps) +
                       " queue pairs")
          .with_hint("use fewer queue pairs (--qps)");
    }
  }
  // The data loops sleep on it when nothing completes for a while (rdma_completion_wait.h);
  // without one they only spin.
  if (auto channel = verbs::create_comp_channel(context_); channel.ok()) {
    const int flags = ::fcntl((*channel)->fd, F_GETFL);
    if (flags >= 0 && ::fcntl((*channel)->fd, F_SETFL, flags | O_NONBLOCK) == 0) {
      channel_ = std::move(*channel);
    }
  } else {
    spdlog::debug("{}: no completion channel ({}): the loops will spin", device_name_,
                  channel.error().message());
  }
  FABRIC_ASSIGN_OR_RETURN(
      send_cq_, verbs::create_cq(context_, cq_entries(uint64_t{spec.qps} * spec.send_depth + 1),
                                 channel_.get()));
  FABRIC_ASSIGN_OR_RETURN(
      recv_cq_, verbs::create_cq(context_, cq_entries(uint64_t{spec_.qps} * spec_.recv_depth + 1),
                                 channel_.get()));

  region_bytes_ = std::max<uint64_t>(kPage, (spec.max_message + kPage - 1) / kPage * kPage);
  const uint64_t total = region_bytes_ * 2 * spec.qps;
  TriageFacts facts;
  facts.device = device_name_;
  facts.port = port;
  facts.memlock_limit = memlock_limit();
  facts.register_bytes = total;
  if (spec.gpu) {
    FABRIC_ASSIGN_OR_RETURN(GpuBuffer gpu, GpuBuffer::allocate(*spec.gpu, total));
    gpu_.emplace(std::move(gpu));
    FABRIC_TRY(gpu_->fill(0));
    base_ = static_cast<uint8_t*>(gpu_->data());
    GpuRegistration used = GpuRegistration::kDmaBuf;
    auto mr = gpu_->register_memory(pd_.get(), kAccess, used);
    if (!mr.ok()) {
      if (mr.error().sys_errno() != 0) {
        return triage_error(RdmaStep::kRegisterMemory, mr.error().operation(),
                            mr.error().sys_errno(), facts);
      }
      return std::move(mr).error();
    }
    mr_ = std::move(*mr);
    gpu_registration_ = used;
  } else {
    void* p = std::aligned_alloc(kPage, total);
    if (p == nullptr) {
      return Error(ErrorCode::kSystem, "allocating the test buffer",
                   std::to_string(total) + " bytes: out of memory");
    }
    host_ = std::unique_ptr<uint8_t, void (*)(uint8_t*)>(static_cast<uint8_t*>(p), free_host);
    base_ = host_.get();
    // Touching every page now keeps page faults out of the measurement.
    std::memset(base_, 0, total);
    auto mr = verbs::reg_mr(pd_.get(), base_, total, kAccess);
    if (!mr.ok()) {
      return triage_error(RdmaStep::kRegisterMemory,
                          "ibv_reg_mr of " + std::to_string(total) + " bytes",
                          mr.error().sys_errno(), facts);
    }
    mr_ = std::move(*mr);
  }
  return Ok();
}

ibv_qp_init_attr RdmaResources::qp_init_attr() const {
  ibv_qp_init_attr attr{};
  attr.send_cq = send_cq_.get();
  attr.recv_cq = recv_cq_.get();
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 0; // selective signaling: the engines ask for a completion every Nth WR
  attr.cap.max_send_wr = spec_.send_depth;
  attr.cap.max_recv_wr = std::max<uint32_t>(spec_.recv_depth, 1);
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = spec_.max_inline;
  return attr;
}

Result<void> RdmaResources::create_qps() {
  for (uint32_t i = 0; i < spec_.qps; ++i) {
    ibv_qp_init_attr attr = qp_init_attr();
    if (i > 0) attr.cap.max_inline_data = max_inline_;
    auto qp = verbs::create_qp(pd_.get(), &attr);
    if (!qp.ok() && i == 0 && attr.cap.max_inline_data > 0) {
      // Not every device takes inline data (or that much of it): go without.
      spec_.max_inline = 0;
      attr = qp_init_attr();
      qp = verbs::create_qp(pd_.get(), &attr);
    }
    if (!qp.ok()) {
      TriageFacts facts;
      facts.device = device_name_;
      facts.port = port_;
      return triage_error(RdmaStep::kCreateQp, "ibv_create_qp", qp.error().sys_errno(), facts);
    }
    if (i == 0) max_inline_ = attr.cap.max_inline_data;
    qps_.push_back(qp->get());
    owned_qps_.push_back(std::move(*qp));
  }
  return Ok();
}

void RdmaResources::adopt_qp(ibv_qp* qp, uint32_t granted_inline) {
  if (qps_.empty()) max_inline_ = granted_inline;
  qps_.push_back(qp);
}

uint32_t RdmaResources::max_rd_atomic() const {
  int depth = std::min(device_attr_.max_qp_rd_atom, device_attr_.max_qp_init_rd_atom);
  return static_cast<uint32_t>(std::clamp(depth, 1, 128));
}

void RdmaResources::clear_remote_halves() {
  if (gpu_) return;
  for (std::size_t i = 0; i < spec_.qps; ++i)
    std::memset(remote_half(i), 0, region_bytes_);
}

std::optional<double> RdmaResources::link_speed_gbps() const {
  auto lane = rdma::lane_speed_gbps(port_attr_.active_speed);
  uint32_t lanes = rdma::width_lanes(port_attr_.active_width);
  if (!lane || lanes == 0) return std::nullopt;
  return *lane * lanes;
}

} // namespace fabric::probes
