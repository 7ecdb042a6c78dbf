// RAII for libnl: a routing-netlink socket and the caches read through it.
#pragma once

#include <memory>

#include "common/result.h"

struct nl_sock;
struct nl_cache;

namespace fabric::netlink {

struct SocketDeleter {
  void operator()(nl_sock* sock) const;
};
struct CacheDeleter {
  void operator()(nl_cache* cache) const;
};

using SocketPtr = std::unique_ptr<nl_sock, SocketDeleter>;
using CachePtr = std::unique_ptr<nl_cache, CacheDeleter>;

// Opens a NETLINK_ROUTE socket in the calling thread's network namespace.
Result<SocketPtr> connect_route();

// Reads the link table (ip link) of the socket's namespace.
Result<CachePtr> read_links(nl_sock* sock);

// libnl reports negative NLE_* codes; this turns one into an Error naming the operation,
// keeping the matching errno where libnl has one.
Error from_nl_error(int nl_error, std::string operation);

} // namespace fabric::netlink
