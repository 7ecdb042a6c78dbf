#include "probes/rdma/rdma_completion_wait.h"

#include <algorithm>
#include <cerrno>
#include <poll.h>

#include "common/verbs_handles.h"

namespace fabric::probes {

Result<void> CompletionWaiter::arm(std::initializer_list<ibv_cq*> cqs) {
  for (ibv_cq* cq : cqs) {
    if (cq != nullptr) FABRIC_TRY(verbs::req_notify_cq(cq));
  }
  armed_ = true;
  return Ok();
}

Result<void> CompletionWaiter::sleep(std::chrono::milliseconds limit) {
  pollfd p{channel_->fd, POLLIN, 0};
  const int ms = static_cast<int>(std::clamp<int64_t>(limit.count(), 0, 60'000));
  if (::poll(&p, 1, ms) < 0 && errno != EINTR) {
    return Error::from_errno(errno, "poll", "completion channel");
  }
  // The channel's fd is non-blocking: take every event that came, then ask again.
  while ((p.revents & POLLIN) != 0) {
    auto event = verbs::take_cq_event(channel_);
    if (!event.ok()) {
      if (event.error().sys_errno() == EAGAIN) break;
      return std::move(event).error();
    }
  }
  armed_ = false;
  return Ok();
}

} // namespace fabric::probes
