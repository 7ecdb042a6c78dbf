#include "common/netlink_socket.h"

#include <cerrno>

#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

namespace fabric::netlink {

void SocketDeleter::operator()(nl_sock* sock) const {
  nl_socket_free(sock);
}
void CacheDeleter::operator()(nl_cache* cache) const {
  nl_cache_free(cache);
}

Error from_nl_error(int nl_error, std::string operation) {
  int code = nl_error < 0 ? -nl_error : nl_error;
  int err = 0;
  switch (code) {
  case NLE_PERM: err = EPERM; break;
  case NLE_NODEV: err = ENODEV; break;
  case NLE_OBJ_NOTFOUND: err = ENOENT; break;
  case NLE_EXIST: err = EEXIST; break;
  case NLE_BUSY: err = EBUSY; break;
  case NLE_NOMEM: err = ENOMEM; break;
  case NLE_INVAL: err = EINVAL; break;
  case NLE_OPNOTSUPP: err = EOPNOTSUPP; break;
  case NLE_AGAIN: err = EAGAIN; break;
  case NLE_RANGE: err = ERANGE; break;
  case NLE_NOACCESS: err = EACCES; break;
  default: break;
  }
  if (err != 0) return Error::from_errno(err, std::move(operation));
  return Error(ErrorCode::kSystem, std::move(operation), nl_geterror(nl_error));
}

Result<SocketPtr> connect_route() {
  SocketPtr sock(nl_socket_alloc());
  if (!sock) return Error::from_errno(ENOMEM, "nl_socket_alloc");
  if (int rc = nl_connect(sock.get(), NETLINK_ROUTE); rc < 0) {
    return from_nl_error(rc, "connecting to NETLINK_ROUTE");
  }
  return sock;
}

Result<CachePtr> read_links(nl_sock* sock) {
  nl_cache* cache = nullptr;
  if (int rc = rtnl_link_alloc_cache(sock, AF_UNSPEC, &cache); rc < 0) {
    return from_nl_error(rc, "reading the link table");
  }
  return CachePtr(cache);
}

} // namespace fabric::netlink
