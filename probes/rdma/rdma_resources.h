// The verbs objects of one side of an RDMA test: device context, protection domain, send
// and receive completion queues, one registered buffer and the RC queue pairs.
//
// Buffer layout: every QP owns two halves of `region_bytes` each (the largest message,
// rounded up to a page). The first half is the local half: the source of its sends and
// writes and the destination of its reads. The second is the remote half: what the peer
// writes into, reads from, and where receives land. Bidirectional tests thus never write
// into memory that the same side is sending from.
//
// With librdmacm the context belongs to the CM id and the QPs are created through it
// (rdma_create_qp); this class then only borrows them (see rdma_cm_connect.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "common/result.h"
#include "common/verbs_handles.h"
#include "probes/rdma/gpu_buffer.h"
#include "probes/rdma/rdma_triage.h"

namespace fabric::probes {

struct ResourceSpec {
  uint32_t qps = 1;
  uint32_t send_depth = 128; // max_send_wr per QP
  uint32_t recv_depth = 0;   // max_recv_wr per QP; 0 when the test posts no receives
  uint32_t max_inline = 0;   // inline bytes asked for; the device may grant fewer (or none)
  uint64_t max_message = 0;  // the largest message of the test
  std::optional<int> gpu;
};

class RdmaResources {
public:
  // Opens `device` and allocates everything but the QPs (OOB mode).
  static Result<std::unique_ptr<RdmaResources>> open(const std::string& device, uint32_t port,
                                                     const ResourceSpec& spec);
  // The same on a context owned by librdmacm.
  static Result<std::unique_ptr<RdmaResources>> on_context(ibv_context* context, uint32_t port,
                                                           const ResourceSpec& spec);

  RdmaResources(const RdmaResources&) = delete;
  RdmaResources& operator=(const RdmaResources&) = delete;
  ~RdmaResources();

  // Creates the spec's RC QPs with ibv_create_qp (OOB mode). When the device refuses the
  // inline size, retries without inline data.
  Result<void> create_qps();
  // The init attributes for rdma_create_qp, and the QP it created (not owned) with the
  // inline size it was granted.
  ibv_qp_init_attr qp_init_attr() const;
  void adopt_qp(ibv_qp* qp, uint32_t granted_inline);

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_.get(); }
  // The channel both CQs report to (non-blocking); nullptr when the device gave none.
  ibv_comp_channel* completion_channel() const { return channel_.get(); }
  ibv_cq* send_cq() const { return send_cq_.get(); }
  ibv_cq* recv_cq() const { return recv_cq_.get(); }
  std::size_t qp_count() const { return qps_.size(); }
  ibv_qp* qp(std::size_t i) const { return qps_[i]; }
  uint32_t port() const { return port_; }
  const std::string& device_name() const { return device_name_; }
  const ibv_port_attr& port_attr() const { return port_attr_; }
  const ResourceSpec& spec() const { return spec_; }

  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }
  uint64_t region_bytes() const { return region_bytes_; }
  // The two halves of QP i's slice of the buffer.
  uint8_t* local_half(std::size_t i) const { return base_ + (2 * i) * region_bytes_; }
  uint8_t* remote_half(std::size_t i) const { return base_ + (2 * i + 1) * region_bytes_; }
  uint64_t address(const uint8_t* p) const { return reinterpret_cast<uintptr_t>(p); }
  bool gpu_memory() const { return gpu_.has_value(); }
  std::optional<GpuRegistration> gpu_registration() const { return gpu_registration_; }
  // Inline bytes the QPs accept (0: none).
  uint32_t max_inline() const { return max_inline_; }
  // Reads this side lets the peer have outstanding, and may have outstanding itself.
  uint32_t max_rd_atomic() const;

  // Zeroes every QP's remote half (host memory only; GPU memory is left as it is).
  void clear_remote_halves();

  // The port's link rate in Gb/s (active speed x width), when the device reports one.
  std::optional<double> link_speed_gbps() const;

private:
  RdmaResources() = default;
  Result<void> allocate(uint32_t port, const ResourceSpec& spec);

  // Declared in creation order: C++ destroys them in reverse, as the kernel requires.
  verbs::Context owned_context_;
  ibv_context* context_ = nullptr;
  verbs::ProtectionDomain pd_;
  verbs::CompletionChannel channel_;
  verbs::CompletionQueue send_cq_;
  verbs::CompletionQueue recv_cq_;
  std::unique_ptr<uint8_t, void (*)(uint8_t*)> host_{nullptr, nullptr};
  std::optional<GpuBuffer> gpu_;
  verbs::MemoryRegion mr_;
  std::vector<verbs::QueuePair> owned_qps_;
  std::vector<ibv_qp*> qps_;

  std::string device_name_;
  uint32_t port_ = 1;
  ibv_port_attr port_attr_{};
  ibv_device_attr device_attr_{};
  ResourceSpec spec_;
  uint8_t* base_ = nullptr;
  uint64_t region_bytes_ = 0;
  uint32_t max_inline_ = 0;
  std::optional<GpuRegistration> gpu_registration_;
};

// RLIMIT_MEMLOCK's soft limit, nullopt when unlimited (for triage).
std::optional<uint64_t> memlock_limit();

} // namespace fabric::probes
