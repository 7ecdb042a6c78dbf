// One netlink request and everything the kernel answers to it, over a libnl socket of any
// family (routing, RDMA). The kernel's refusal keeps its errno and, where the kernel
// explains itself (extended ACK), its own words: "mtu greater than device maximum" tells
// a user more than EINVAL.
#pragma once

#include <functional>
#include <string>

#include "common/result.h"

struct nl_sock;
struct nl_msg;
struct nlmsghdr;

namespace fabric::netlink {

// Asks the kernel to explain refusals (NETLINK_EXT_ACK) and not to echo the request back
// in its acknowledgements (NETLINK_CAP_ACK). Older kernels lack both; that is not an error.
void request_extended_acks(nl_sock* sock);

// Called for each message of the answer (the reply, or every part of a dump).
using MessageHandler = std::function<Result<void>(const nlmsghdr* message)>;

// Sends `msg` and reads the whole answer: for a dump (NLM_F_DUMP) every part up to
// NLMSG_DONE, otherwise the reply (if any) and the acknowledgement, which is requested.
// A kernel refusal becomes Error::from_errno(errno, operation, <extended-ACK text>); an
// error from `on_message` stops the reading and is returned as it is.
Result<void> transact(nl_sock* sock, nl_msg* msg, const std::string& operation,
                      const MessageHandler& on_message = {});

} // namespace fabric::netlink
