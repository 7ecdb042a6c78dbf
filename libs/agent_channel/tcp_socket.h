// TCP sockets for the agent and its clients: "host:port" parsing (IPv4, IPv6, names),
// connect with a deadline over every address getaddrinfo returns, listening sockets, and
// the address text used in messages and logs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <sys/socket.h>

#include "common/fd.h"
#include "common/result.h"

namespace fabric::probes {

struct Endpoint {
  std::string host; // name, IPv4 or IPv6 text (without brackets)
  uint16_t port = 0;
};

// "host", "host:port", "10.0.0.1:18515", "[fd00::1]:18515", "fd00::1" (a bare IPv6
// address has no port). A missing port becomes `default_port`. `what` names the argument.
Result<Endpoint> parse_endpoint(std::string_view text, uint16_t default_port,
                                std::string_view what = "host");

// "10.0.0.1:18515", "[fd00::1]:18515", "node-a:18515".
std::string format_endpoint(std::string_view host, uint16_t port);
inline std::string format_endpoint(const Endpoint& e) {
  return format_endpoint(e.host, e.port);
}

// The text form of a socket address; IPv4-mapped IPv6 addresses print as IPv4.
std::string address_text(const sockaddr* address, socklen_t length);
// The same without the port: "10.0.0.2", "fd00::2".
std::string host_text(const sockaddr* address, socklen_t length);
// The local and remote address of a connected socket.
std::string local_address_text(int fd);
std::string peer_address_text(int fd);
// The remote host of a connected socket as a numeric address that connect_tcp() reaches
// again ("10.0.0.2", "fd00::2", "fe80::2%3"); "" when the socket has none.
std::string peer_host_text(int fd);

// Connects to every address `host` resolves to in turn until one answers, within
// `timeout` in total. The socket returned is blocking. Errors: kNotFound when the name
// does not resolve, kTimeout when nothing answered, else the last connect() errno
// (ECONNREFUSED: reachable, but nothing listens on that port).
Result<UniqueFd> connect_tcp(const std::string& host, uint16_t port,
                             std::chrono::milliseconds timeout);

// A listening socket. An empty `bind_address` means every address: dual-stack "::" where
// the host has IPv6, else "0.0.0.0". Port 0 picks a free port (see bound_port()).
Result<UniqueFd> listen_tcp(const std::string& bind_address, uint16_t port, int backlog = 128);

// The local port a socket is bound to.
Result<uint16_t> bound_port(int fd);

// Milliseconds left until `deadline`, at least 0: the timeout of a poll() that must not
// outlast it.
int poll_timeout_ms(std::chrono::steady_clock::time_point deadline);

// Clears or sets O_NONBLOCK.
Result<void> set_blocking(int fd, bool blocking);

// Socket options used by the probes; errors name the option.
Result<void> set_nodelay(int fd);
// SO_SNDTIMEO and SO_RCVTIMEO: a blocking call that makes no progress for `timeout` fails
// with EAGAIN instead of waiting forever.
Result<void> set_io_timeout(int fd, std::chrono::milliseconds timeout);

} // namespace fabric::probes
