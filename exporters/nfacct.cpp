#include "exporters/nfacct.h"

#include <libmnl/libmnl.h>
#include <libnetfilter_acct/libnetfilter_acct.h>
#include <linux/netfilter/nfnetlink.h>

#include <cerrno>
#include <ctime>
#include <memory>

namespace fabric::exporters {
namespace {

struct NfacctDeleter {
  void operator()(nfacct* n) const { nfacct_free(n); }
};
using NfacctPtr = std::unique_ptr<nfacct, NfacctDeleter>;

// Large enough that a dump of thousands of objects takes few recv calls (the kernel fills
// up to what the reader offers, 32 KiB per skb at most).
constexpr std::size_t kReceiveBuffer = 64 * 1024;

Error from_errno(int err, const std::string& operation, const std::string& detail = {}) {
  Error e = Error::from_errno(err, operation, detail);
  if (err == EPERM) return std::move(e).with_hint("nfacct needs CAP_NET_ADMIN");
  if (err == EBUSY)
    return Error(ErrorCode::kTryAgain, operation, detail + ": still used by a rule");
  return e;
}

struct DumpContext {
  std::string_view prefix;
  std::vector<NfacctCounter>* out;
};

int on_object(const nlmsghdr* message, void* data) {
  auto* context = static_cast<DumpContext*>(data);
  NfacctPtr object(nfacct_alloc());
  if (!object) return MNL_CB_ERROR;
  if (nfacct_nlmsg_parse_payload(message, object.get()) < 0) return MNL_CB_ERROR;
  const char* name = nfacct_attr_get_str(object.get(), NFACCT_ATTR_NAME);
  if (name == nullptr || !std::string_view(name).starts_with(context->prefix)) return MNL_CB_OK;
  context->out->push_back({name, nfacct_attr_get_u64(object.get(), NFACCT_ATTR_PKTS),
                           nfacct_attr_get_u64(object.get(), NFACCT_ATTR_BYTES)});
  return MNL_CB_OK;
}

} // namespace

Result<NfacctSocket> NfacctSocket::open() {
  FABRIC_ASSIGN_OR_RETURN(NetfilterSocket socket,
                          NetfilterSocket::open([](int err, const std::string& operation) {
                            return from_errno(err, operation);
                          }));
  return NfacctSocket(std::move(socket));
}

Result<std::vector<NfacctCounter>> NfacctSocket::dump(std::string_view prefix) {
  std::vector<char> buffer(kReceiveBuffer);
  const uint32_t sequence = nl_.next_sequence();
  nlmsghdr* message =
      nfacct_nlmsg_build_hdr(buffer.data(), NFNL_MSG_ACCT_GET, NLM_F_DUMP, sequence);
  if (mnl_socket_sendto(nl_.get(), message, message->nlmsg_len) < 0)
    return from_errno(errno, "nfacct dump: send");
  std::vector<NfacctCounter> out;
  DumpContext context{prefix, &out};
  while (true) {
    const ssize_t n = mnl_socket_recvfrom(nl_.get(), buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return from_errno(errno, "nfacct dump: receive");
    }
    const int rc = mnl_cb_run(buffer.data(), static_cast<std::size_t>(n), sequence, nl_.port_id(),
                              on_object, &context);
    if (rc == MNL_CB_STOP) break; // NLMSG_DONE
    if (rc < 0) {
      // The kernel's error for the whole request (EPERM without CAP_NET_ADMIN, ENOENT or
      // EOPNOTSUPP where nfnetlink_acct is missing) comes back as an NLMSG_ERROR.
      const int err = errno;
      if (err == EOPNOTSUPP || err == ENOENT) {
        return Error(ErrorCode::kUnsupported, "nfacct dump",
                     "the kernel has no extended accounting (nfnetlink_acct)");
      }
      return from_errno(err, "nfacct dump");
    }
  }
  return out;
}

Result<void> NfacctSocket::request(uint8_t command, uint16_t flags, const std::string& name,
                                   const char* what) {
  if (name.empty() || name.size() > kNfacctNameMax) {
    return Error(ErrorCode::kInvalidArgument, what,
                 "nfacct name '" + name + "' must be 1-31 characters");
  }
  std::vector<char> buffer(MNL_SOCKET_BUFFER_SIZE);
  const uint32_t sequence = nl_.next_sequence();
  nlmsghdr* message = nfacct_nlmsg_build_hdr(buffer.data(), command,
                                             static_cast<uint16_t>(flags | NLM_F_ACK), sequence);
  NfacctPtr object(nfacct_alloc());
  if (!object) return Error(ErrorCode::kSystem, what, "out of memory");
  nfacct_attr_set_str(object.get(), NFACCT_ATTR_NAME, name.c_str());
  nfacct_nlmsg_build_payload(message, object.get());
  if (mnl_socket_sendto(nl_.get(), message, message->nlmsg_len) < 0)
    return from_errno(errno, what, name);
  while (true) {
    const ssize_t n = mnl_socket_recvfrom(nl_.get(), buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return from_errno(errno, what, name);
    }
    const int rc = mnl_cb_run(buffer.data(), static_cast<std::size_t>(n), sequence, nl_.port_id(),
                              nullptr, nullptr);
    if (rc >= 0) return Ok(); // the ACK
    return from_errno(errno, what, name);
  }
}

Result<void> NfacctSocket::create(const std::string& name) {
  auto created = request(NFNL_MSG_ACCT_NEW, NLM_F_CREATE | NLM_F_EXCL, name, "nfacct add");
  if (!created.ok() && created.error().sys_errno() == EEXIST) return Ok();
  return created;
}

Result<void> NfacctSocket::remove(const std::string& name) {
  auto removed = request(NFNL_MSG_ACCT_DEL, 0, name, "nfacct delete");
  if (!removed.ok() && removed.error().sys_errno() == ENOENT) return Ok();
  return removed;
}

} // namespace fabric::exporters
