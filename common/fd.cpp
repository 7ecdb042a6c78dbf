#include "common/fd.h"

#include <unistd.h>

namespace fabric {

void UniqueFd::reset(int fd) {
  // close() must not be retried on EINTR on Linux: the descriptor is already released.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

} // namespace fabric
