#include "libs/agent_channel/tcp_socket.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <utility>

#include "common/resolve.h"
#include "common/units.h"

namespace fabric::probes {
namespace {

using Clock = std::chrono::steady_clock;

// A listening address is normally numeric or empty; a name gets this long to resolve.
constexpr std::chrono::milliseconds kBindResolveTimeout = std::chrono::seconds(10);

Result<AddrinfoPtr> resolve(const std::string& host, uint16_t port, int flags,
                            std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags | AI_NUMERICSERV;
  return resolve_address(host, std::to_string(port), hints, timeout);
}

// One non-blocking connect() bounded by `deadline`; returns the errno (0 = connected).
int connect_one(int fd, const addrinfo* ai, Clock::time_point deadline) {
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  for (;;) {
    pollfd p{fd, POLLOUT, 0};
    int n = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (n == 0) return ETIMEDOUT;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
  }
}

Result<UniqueFd> listen_on(const std::string& bind_address, uint16_t port, int backlog) {
  FABRIC_ASSIGN_OR_RETURN(AddrinfoPtr found,
                          resolve(bind_address, port, AI_PASSIVE, kBindResolveTimeout));
  Error last(ErrorCode::kNotFound, "listening on " + format_endpoint(bind_address, port),
             "no usable address");
  for (const addrinfo* ai = found.get(); ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd) {
      last = Error::from_errno(errno, "socket", format_endpoint(bind_address, port));
      continue;
    }
    int one = 1;
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6 && bind_address == "::") {
      // Dual stack: one socket serves IPv4 clients too (as ::ffff:a.b.c.d).
      int zero = 0;
      (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = Error::from_errno(errno, "bind", format_endpoint(bind_address, port));
      continue;
    }
    if (::listen(fd.get(), backlog) != 0) {
      last = Error::from_errno(errno, "listen", format_endpoint(bind_address, port));
      continue;
    }
    return fd;
  }
  return last;
}

} // namespace

Result<Endpoint> parse_endpoint(std::string_view text, uint16_t default_port,
                                std::string_view what) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, std::string(what),
                 "'" + std::string(text) + "': " + why);
  };
  if (text.empty()) return bad("empty host");
  Endpoint e{std::string(text), default_port};
  std::string_view port_text;
  if (text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return bad("missing ']' after the IPv6 address");
    e.host = std::string(text.substr(1, close - 1));
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("expected ':PORT' after ']'");
      port_text = rest.substr(1);
      if (port_text.empty()) return bad("empty port");
    }
  } else if (auto colon = text.find(':'); colon != std::string_view::npos) {
    // Several colons without brackets: an IPv6 address with no port.
    if (text.find(':', colon + 1) == std::string_view::npos) {
      e.host = std::string(text.substr(0, colon));
      port_text = text.substr(colon + 1);
      if (port_text.empty()) return bad("empty port");
    }
  }
  if (e.host.empty()) return bad("empty host");
  if (!port_text.empty()) {
    auto port = units::parse_uint(port_text, std::string(what) + " port", 1, 65535);
    if (!port.ok()) return bad("port must be a number from 1 to 65535");
    e.port = static_cast<uint16_t>(*port);
  }
  return e;
}

std::string format_endpoint(std::string_view host, uint16_t port) {
  std::string h(host);
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  return h + ":" + std::to_string(port);
}

namespace {

// The host part and the port of an IP socket address; false for other families.
bool split_address(const sockaddr* address, socklen_t length, std::string& host_out,
                   uint16_t& port) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], host, sizeof host);
    } else {
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    }
    port = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  host_out = host;
  return true;
}

} // namespace

std::string address_text(const sockaddr* address, socklen_t length) {
  std::string host;
  uint16_t port = 0;
  if (!split_address(address, length, host, port)) return "?";
  return format_endpoint(host, port);
}

std::string host_text(const sockaddr* address, socklen_t length) {
  std::string host;
  uint16_t port = 0;
  if (!split_address(address, length, host, port)) return "?";
  return host;
}

namespace {

// A socket's own (getsockname) or remote (getpeername) address; nullopt when it has none.
using SocketNameCall = int (*)(int, sockaddr*, socklen_t*);
std::optional<std::pair<sockaddr_storage, socklen_t>> socket_name(int fd, SocketNameCall call) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (call(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return std::nullopt;
  return std::pair{ss, len};
}

} // namespace

std::string local_address_text(int fd) {
  auto name = socket_name(fd, ::getsockname);
  return name ? address_text(reinterpret_cast<sockaddr*>(&name->first), name->second) : "?";
}

std::string peer_address_text(int fd) {
  auto name = socket_name(fd, ::getpeername);
  return name ? address_text(reinterpret_cast<sockaddr*>(&name->first), name->second) : "?";
}

std::string peer_host_text(int fd) {
  auto name = socket_name(fd, ::getpeername);
  if (!name) return "";
  auto& [ss, len] = *name;
  std::string host;
  uint16_t port = 0;
  if (!split_address(reinterpret_cast<sockaddr*>(&ss), len, host, port)) return "";
  // A link-local address means nothing without its interface; getaddrinfo() takes the
  // interface's index after a '%'.
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
  if (ss.ss_family == AF_INET6 && in6->sin6_scope_id != 0 &&
      !IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
    host += "%" + std::to_string(in6->sin6_scope_id);
  }
  return host;
}

Result<UniqueFd> connect_tcp(const std::string& host, uint16_t port,
                             std::chrono::milliseconds timeout) {
  const std::string where = format_endpoint(host, port);
  auto deadline = Clock::now() + timeout;
  // The name's lookup counts against the same deadline as the connects.
  FABRIC_ASSIGN_OR_RETURN(AddrinfoPtr found, resolve(host, port, 0, timeout));
  int last_errno = 0;
  for (const addrinfo* ai = found.get(); ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!fd) {
      last_errno = errno;
      continue;
    }
    last_errno = connect_one(fd.get(), ai, deadline);
    if (last_errno == 0) {
      FABRIC_TRY(set_blocking(fd.get(), true));
      return fd;
    }
    if (Clock::now() >= deadline) break;
  }
  if (last_errno == ETIMEDOUT) {
    double seconds = std::chrono::duration<double>(timeout).count();
    char text[32];
    std::snprintf(text, sizeof text, "%g", seconds);
    return Error(ErrorCode::kTimeout, "connecting to " + where,
                 std::string("no answer within ") + text +
                     " s (host down, or packets dropped by a firewall?)");
  }
  return Error::from_errno(last_errno, "connecting to " + where);
}

Result<UniqueFd> listen_tcp(const std::string& bind_address, uint16_t port, int backlog) {
  if (!bind_address.empty()) return listen_on(bind_address, port, backlog);
  auto dual = listen_on("::", port, backlog);
  if (dual.ok()) return dual;
  // A host (or namespace) with IPv6 disabled: IPv4 only.
  if (dual.error().code() == ErrorCode::kUnsupported ||
      dual.error().code() == ErrorCode::kNotFound || dual.error().sys_errno() == EADDRNOTAVAIL) {
    return listen_on("0.0.0.0", port, backlog);
  }
  return dual;
}

int poll_timeout_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

Result<void> set_blocking(int fd, bool blocking) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return Error::from_errno(errno, "fcntl(F_GETFL)");
  flags = blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK;
  if (::fcntl(fd, F_SETFL, flags) != 0) return Error::from_errno(errno, "fcntl(F_SETFL)");
  return Ok();
}

Result<uint16_t> bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return Error::from_errno(errno, "getsockname");
  }
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return Error(ErrorCode::kInternal, "getsockname", "not an IP socket");
}

Result<void> set_nodelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return Error::from_errno(errno, "setsockopt(TCP_NODELAY)");
  }
  return Ok();
}

Result<void> set_io_timeout(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  for (int option : {SO_SNDTIMEO, SO_RCVTIMEO}) {
    if (::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv) != 0) {
      return Error::from_errno(errno, option == SO_SNDTIMEO ? "setsockopt(SO_SNDTIMEO)"
                                                            : "setsockopt(SO_RCVTIMEO)");
    }
  }
  return Ok();
}

} // namespace fabric::probes
