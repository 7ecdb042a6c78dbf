// A bound NETLINK_NETFILTER socket (libmnl), owned once for the subsystems that speak over
// it (ip sets, nfacct): open, bind, the port id replies are checked against, and the
// sequence numbers of requests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/result.h"

struct mnl_socket;

namespace fabric::exporters {

class NetfilterSocket {
public:
  // `error` turns a failing call's errno into the caller's error (each subsystem says what
  // it needs: a capability, a kernel module).
  using ErrorFn = std::function<Error(int err, const std::string& operation)>;
  static Result<NetfilterSocket> open(const ErrorFn& error);

  NetfilterSocket(NetfilterSocket&& other) noexcept;
  NetfilterSocket& operator=(NetfilterSocket&& other) noexcept;
  ~NetfilterSocket();

  mnl_socket* get() const { return socket_; }
  uint32_t port_id() const { return port_id_; }
  uint32_t next_sequence() { return ++sequence_; }

private:
  explicit NetfilterSocket(mnl_socket* socket) : socket_(socket) {}

  mnl_socket* socket_ = nullptr;
  uint32_t port_id_ = 0;
  uint32_t sequence_ = 0;
};

} // namespace fabric::exporters
