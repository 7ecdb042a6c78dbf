#include "common/verbs_handles.h"

#include <cerrno>

#include <spdlog/spdlog.h>

namespace fabric::verbs {

namespace detail {
void note_destroy_failure(const char* call, int rc) {
  spdlog::debug("{} failed with {} (resources still attached?)", call, rc);
}
} // namespace detail

namespace {

// Verbs calls that return NULL leave the reason in errno, but some providers forget to
// set it; never report "Success" for a failure.
int errno_or(int fallback) {
  return errno != 0 ? errno : fallback;
}

} // namespace

Result<DeviceList> DeviceList::get() {
  DeviceList list;
  int count = 0;
  errno = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr) {
    int err = errno_or(ENODEV);
    // Without the RDMA subsystem (no ib_uverbs) libibverbs fails rather than returning
    // an empty list; to a user that is simply "no RDMA device".
    if (err == ENOSYS || err == ENOENT || err == ENODEV) return list;
    return Error::from_errno(err, "ibv_get_device_list");
  }
  list.devices_.reset(devices);
  list.count_ = static_cast<std::size_t>(count);
  return list;
}

std::vector<std::string> DeviceList::names() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count_; ++i)
    out.emplace_back(ibv_get_device_name((*this)[i]));
  return out;
}

Result<ibv_device*> DeviceList::find(const std::string& name) const {
  for (std::size_t i = 0; i < count_; ++i) {
    if (name == ibv_get_device_name((*this)[i])) return (*this)[i];
  }
  std::string known;
  for (const auto& n : names())
    known += (known.empty() ? "" : ", ") + n;
  return Error(ErrorCode::kNotFound, "RDMA device '" + name + "'",
               known.empty() ? "no RDMA device on this host" : "not found (have: " + known + ")");
}

Result<Context> open_device(ibv_device* device) {
  errno = 0;
  Context ctx(ibv_open_device(device));
  if (!ctx) {
    return Error::from_errno(errno_or(ENODEV), "ibv_open_device", ibv_get_device_name(device));
  }
  return ctx;
}

Result<ibv_device_attr> query_device(ibv_context* context) {
  ibv_device_attr attr{};
  if (int rc = ibv_query_device(context, &attr); rc != 0) {
    return Error::from_errno(rc, "ibv_query_device", ibv_get_device_name(context->device));
  }
  return attr;
}

Result<ibv_port_attr> query_port(ibv_context* context, uint8_t port) {
  ibv_port_attr attr{};
  if (int rc = ibv_query_port(context, port, &attr); rc != 0) {
    return Error::from_errno(rc, "ibv_query_port",
                             std::string(ibv_get_device_name(context->device)) + " port " +
                                 std::to_string(port));
  }
  return attr;
}

Result<std::vector<ibv_gid_entry>> query_gid_table(ibv_context* context, std::size_t capacity) {
  std::vector<ibv_gid_entry> entries(capacity);
  if (capacity == 0) return entries;
  ssize_t n = ibv_query_gid_table(context, entries.data(), entries.size(), 0);
  if (n < 0) {
    return Error::from_errno(static_cast<int>(-n), "ibv_query_gid_table",
                             ibv_get_device_name(context->device));
  }
  entries.resize(static_cast<std::size_t>(n));
  return entries;
}

Result<ProtectionDomain> alloc_pd(ibv_context* context) {
  errno = 0;
  ProtectionDomain pd(ibv_alloc_pd(context));
  if (!pd) return Error::from_errno(errno_or(ENOMEM), "ibv_alloc_pd");
  return pd;
}

Result<CompletionChannel> create_comp_channel(ibv_context* context) {
  errno = 0;
  CompletionChannel channel(ibv_create_comp_channel(context));
  if (!channel) return Error::from_errno(errno_or(ENOMEM), "ibv_create_comp_channel");
  return channel;
}

Result<void> req_notify_cq(ibv_cq* cq) {
  // Returns an errno value, not -1.
  if (int rc = ibv_req_notify_cq(cq, 0); rc != 0) return Error::from_errno(rc, "ibv_req_notify_cq");
  return Ok();
}

Result<ibv_cq*> take_cq_event(ibv_comp_channel* channel) {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  errno = 0;
  if (ibv_get_cq_event(channel, &cq, &context) != 0) {
    return Error::from_errno(errno_or(EIO), "ibv_get_cq_event");
  }
  // Every event must be acknowledged before its CQ can be destroyed.
  ibv_ack_cq_events(cq, 1);
  return cq;
}

Result<CompletionQueue> create_cq(ibv_context* context, int entries, ibv_comp_channel* channel) {
  errno = 0;
  CompletionQueue cq(ibv_create_cq(context, entries, nullptr, channel, 0));
  if (!cq) {
    return Error::from_errno(errno_or(ENOMEM), "ibv_create_cq",
                             std::to_string(entries) + " entries");
  }
  return cq;
}

Result<MemoryRegion> reg_mr(ibv_pd* pd, void* addr, std::size_t length, int access) {
  errno = 0;
  MemoryRegion mr(ibv_reg_mr(pd, addr, length, access));
  if (!mr) {
    int err = errno_or(ENOMEM);
    Error e = Error::from_errno(err, "ibv_reg_mr", std::to_string(length) + " bytes");
    if (err == ENOMEM || err == EPERM) {
      e.with_hint("registering memory pins it: raise the memlock limit (ulimit -l unlimited)");
    }
    return e;
  }
  return mr;
}

Result<MemoryRegion> reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, std::size_t length, uint64_t iova,
                                   int fd, int access) {
  errno = 0;
  MemoryRegion mr(ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access));
  if (!mr) {
    return Error::from_errno(errno_or(EINVAL), "ibv_reg_dmabuf_mr",
                             std::to_string(length) + " bytes");
  }
  return mr;
}

Result<QueuePair> create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  errno = 0;
  QueuePair qp(ibv_create_qp(pd, attr));
  if (!qp) return Error::from_errno(errno_or(ENOMEM), "ibv_create_qp");
  return qp;
}

} // namespace fabric::verbs
