// Move-only owners of libibverbs objects, and factories that translate verbs' mixed return
// conventions (NULL + errno, returned errno) into Result once, here.
//
// Destruction order matters to the kernel (a PD with live MRs is EBUSY): declare owners in
// creation order so that C++ destroys them in reverse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "common/result.h"

namespace fabric::verbs {

namespace detail {
// Logs (at debug) a destroy call that failed: that means a leak or an ordering bug.
void note_destroy_failure(const char* call, int rc);

template <typename T, int (*Destroy)(T*), const char* Name> struct Deleter {
  void operator()(T* object) const {
    if (int rc = Destroy(object); rc != 0) note_destroy_failure(Name, rc);
  }
};

inline constexpr char kCloseDevice[] = "ibv_close_device";
inline constexpr char kDeallocPd[] = "ibv_dealloc_pd";
inline constexpr char kDestroyCq[] = "ibv_destroy_cq";
inline constexpr char kDeregMr[] = "ibv_dereg_mr";
inline constexpr char kDestroyQp[] = "ibv_destroy_qp";
inline constexpr char kDestroyCompChannel[] = "ibv_destroy_comp_channel";
} // namespace detail

using Context =
    std::unique_ptr<ibv_context,
                    detail::Deleter<ibv_context, ibv_close_device, detail::kCloseDevice>>;
using ProtectionDomain =
    std::unique_ptr<ibv_pd, detail::Deleter<ibv_pd, ibv_dealloc_pd, detail::kDeallocPd>>;
using CompletionQueue =
    std::unique_ptr<ibv_cq, detail::Deleter<ibv_cq, ibv_destroy_cq, detail::kDestroyCq>>;
using MemoryRegion =
    std::unique_ptr<ibv_mr, detail::Deleter<ibv_mr, ibv_dereg_mr, detail::kDeregMr>>;
using QueuePair =
    std::unique_ptr<ibv_qp, detail::Deleter<ibv_qp, ibv_destroy_qp, detail::kDestroyQp>>;
using CompletionChannel =
    std::unique_ptr<ibv_comp_channel, detail::Deleter<ibv_comp_channel, ibv_destroy_comp_channel,
                                                      detail::kDestroyCompChannel>>;

// The device list from ibv_get_device_list, freed on destruction.
class DeviceList {
public:
  static Result<DeviceList> get();

  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  ibv_device* operator[](std::size_t i) const { return devices_.get()[i]; }
  // The device called `name`, or a kNotFound error listing the ones that exist.
  Result<ibv_device*> find(const std::string& name) const;
  std::vector<std::string> names() const;

private:
  struct Free {
    void operator()(ibv_device** list) const { ibv_free_device_list(list); }
  };
  std::unique_ptr<ibv_device*, Free> devices_;
  std::size_t count_ = 0;
};

Result<Context> open_device(ibv_device* device);
// ibv_query_device and ibv_query_port return an errno value; errors name the device.
Result<ibv_device_attr> query_device(ibv_context* context);
Result<ibv_port_attr> query_port(ibv_context* context, uint8_t port);
// The valid GID entries of every port, with their type and netdev, in one call
// (ibv_query_gid_table, rdma-core 32 and later); `capacity` bounds the entries read, the
// sum of the ports' gid_tbl_len. Errors name the device.
Result<std::vector<ibv_gid_entry>> query_gid_table(ibv_context* context, std::size_t capacity);
Result<ProtectionDomain> alloc_pd(ibv_context* context);
Result<CompletionChannel> create_comp_channel(ibv_context* context);
Result<CompletionQueue> create_cq(ibv_context* context, int entries,
                                  ibv_comp_channel* channel = nullptr);
// Asks for an event on `channel` at the CQ's next completion.
Result<void> req_notify_cq(ibv_cq* cq);
// Takes one waiting event off `channel` (call when its fd is readable) and acknowledges
// it; the CQ it came from, whose notification must be asked for again.
Result<ibv_cq*> take_cq_event(ibv_comp_channel* channel);
Result<MemoryRegion> reg_mr(ibv_pd* pd, void* addr, std::size_t length, int access);
// Registers `length` bytes of the dma-buf `fd` from `offset`, addressed by the peer as
// `iova` (GPU memory exported by its driver; rdma-core >= 34).
Result<MemoryRegion> reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, std::size_t length, uint64_t iova,
                                   int fd, int access);
Result<QueuePair> create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);

} // namespace fabric::verbs
