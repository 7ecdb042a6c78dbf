#include "exporters/netfilter_socket.h"

#include <libmnl/libmnl.h>

#include <cerrno>
#include <ctime>
#include <utility>

namespace fabric::exporters {

Result<NetfilterSocket> NetfilterSocket::open(const ErrorFn& error) {
  mnl_socket* socket = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
  if (socket == nullptr) return error(errno, "socket(NETLINK_NETFILTER)");
  NetfilterSocket out(socket);
  if (mnl_socket_bind(socket, 0, MNL_SOCKET_AUTOPID) < 0)
    return error(errno, "bind(NETLINK_NETFILTER)");
  out.port_id_ = mnl_socket_get_portid(socket);
  // Sequence numbers start from the clock, so that a reply meant for an earlier socket
  // of the same port id is not taken for one of ours.
  out.sequence_ = static_cast<uint32_t>(std::time(nullptr));
  return out;
}

NetfilterSocket::NetfilterSocket(NetfilterSocket&& other) noexcept
    : socket_(std::exchange(other.socket_, nullptr)), port_id_(other.port_id_),
      sequence_(other.sequence_) {}

NetfilterSocket& NetfilterSocket::operator=(NetfilterSocket&& other) noexcept {
  if (this != &other) {
    if (socket_ != nullptr) mnl_socket_close(socket_);
    socket_ = std::exchange(other.socket_, nullptr);
    port_id_ = other.port_id_;
    sequence_ = other.sequence_;
  }
  return *this;
}

NetfilterSocket::~NetfilterSocket() {
  if (socket_ != nullptr) mnl_socket_close(socket_);
}

} // namespace fabric::exporters
