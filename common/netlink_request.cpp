#include "common/netlink_request.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <sys/socket.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "common/netlink_socket.h"

namespace fabric::netlink {
namespace {

struct Answer {
  const MessageHandler* handler = nullptr;
  bool finished = false;
  int kernel_errno = 0;
  std::string kernel_text;
  std::optional<Error> handler_error;
};

// The NLMSGERR_ATTR_MSG text the kernel appends to an error with NETLINK_EXT_ACK. The
// TLVs follow struct nlmsgerr and, unless the ACK was capped, the echoed request.
std::string extended_ack_text(const nlmsgerr* err) {
  const auto* base = reinterpret_cast<const uint8_t*>(err);
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(base - NLMSG_HDRLEN);
  if ((hdr->nlmsg_flags & NLM_F_ACK_TLVS) == 0) return {};
  std::size_t offset = sizeof(nlmsgerr);
  if ((hdr->nlmsg_flags & NLM_F_CAPPED) == 0) offset += err->msg.nlmsg_len - NLMSG_HDRLEN;
  offset = NLMSG_ALIGN(offset);
  const std::size_t payload = hdr->nlmsg_len - NLMSG_HDRLEN;
  if (offset >= payload) return {};
  nlattr* tb[NLMSGERR_ATTR_MAX + 1] = {};
  auto* head = reinterpret_cast<nlattr*>(const_cast<uint8_t*>(base) + offset);
  if (nla_parse(tb, NLMSGERR_ATTR_MAX, head, static_cast<int>(payload - offset), nullptr) < 0 ||
      tb[NLMSGERR_ATTR_MSG] == nullptr) {
    return {};
  }
  const char* text = static_cast<const char*>(nla_data(tb[NLMSGERR_ATTR_MSG]));
  return std::string(text, strnlen(text, static_cast<std::size_t>(nla_len(tb[NLMSGERR_ATTR_MSG]))));
}

int on_valid(nl_msg* msg, void* arg) {
  auto* answer = static_cast<Answer*>(arg);
  if (answer->handler == nullptr || !*answer->handler) return NL_OK;
  auto handled = (*answer->handler)(nlmsg_hdr(msg));
  if (handled.ok()) return NL_OK;
  answer->handler_error = std::move(handled).error();
  return NL_STOP;
}

int on_finished(nl_msg*, void* arg) {
  static_cast<Answer*>(arg)->finished = true;
  return NL_STOP;
}

int on_error(sockaddr_nl*, nlmsgerr* err, void* arg) {
  auto* answer = static_cast<Answer*>(arg);
  answer->finished = true;
  answer->kernel_errno = -err->error;
  answer->kernel_text = extended_ack_text(err);
  return NL_STOP;
}

} // namespace

void request_extended_acks(nl_sock* sock) {
  int one = 1;
  int fd = nl_socket_get_fd(sock);
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
}

Result<void> transact(nl_sock* sock, nl_msg* msg, const std::string& operation,
                      const MessageHandler& on_message) {
  nlmsghdr* hdr = nlmsg_hdr(msg);
  // Dumps end with NLMSG_DONE and are never acknowledged; everything else is, so that a
  // request that changes something has a definite answer.
  if ((hdr->nlmsg_flags & NLM_F_DUMP) != NLM_F_DUMP) hdr->nlmsg_flags |= NLM_F_ACK;
  nl_socket_disable_auto_ack(sock);

  Answer answer;
  answer.handler = &on_message;
  std::unique_ptr<nl_cb, decltype(&nl_cb_put)> cb(nl_cb_alloc(NL_CB_DEFAULT), &nl_cb_put);
  if (!cb) return Error::from_errno(ENOMEM, "nl_cb_alloc");
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_valid, &answer);
  nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, on_finished, &answer);
  nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, on_finished, &answer);
  nl_cb_err(cb.get(), NL_CB_CUSTOM, on_error, &answer);

  if (int rc = nl_send_auto(sock, msg); rc < 0) return from_nl_error(rc, operation);
  while (!answer.finished && !answer.handler_error) {
    int rc = nl_recvmsgs(sock, cb.get());
    if (answer.handler_error || answer.kernel_errno != 0) break;
    if (rc < 0) return from_nl_error(rc, operation);
  }
  if (answer.handler_error) return std::move(*answer.handler_error);
  if (answer.kernel_errno != 0) {
    return Error::from_errno(answer.kernel_errno, operation, std::move(answer.kernel_text));
  }
  return Ok();
}

} // namespace fabric::netlink
