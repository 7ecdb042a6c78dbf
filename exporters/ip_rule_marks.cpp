#include "exporters/ip_rule_marks.h"

#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <memory>

#include "common/netlink_request.h"
#include "common/netlink_socket.h"

namespace fabric::exporters {

namespace {

struct MsgDeleter {
  void operator()(nl_msg* msg) const { nlmsg_free(msg); }
};

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", value);
  return text;
}

} // namespace

Result<std::vector<IpRuleMark>> ip_rule_marks(int family) {
  FABRIC_ASSIGN_OR_RETURN(netlink::SocketPtr sock, netlink::connect_route());
  std::unique_ptr<nl_msg, MsgDeleter> msg(nlmsg_alloc_simple(RTM_GETRULE, NLM_F_DUMP));
  if (!msg) return Error(ErrorCode::kSystem, "listing ip rules", "out of memory");
  fib_rule_hdr header{};
  header.family = static_cast<uint8_t>(family);
  if (nlmsg_append(msg.get(), &header, sizeof header, NLMSG_ALIGNTO) < 0)
    return Error(ErrorCode::kSystem, "listing ip rules", "message too small");

  const std::string name = family == AF_INET6 ? "ipv6" : "ipv4";
  std::vector<IpRuleMark> out;
  auto read = netlink::transact(
      sock.get(), msg.get(), "listing " + name + " rules", [&](const nlmsghdr* m) -> Result<void> {
        if (m->nlmsg_type != RTM_NEWRULE) return Ok();
        nlattr* attrs[FRA_MAX + 1] = {};
        if (nlmsg_parse(const_cast<nlmsghdr*>(m), sizeof(fib_rule_hdr), attrs, FRA_MAX, nullptr) <
                0 ||
            attrs[FRA_FWMARK] == nullptr)
          return Ok();
        const uint32_t mark = nla_get_u32(attrs[FRA_FWMARK]);
        // Without a mask the kernel compares the whole mark.
        const uint32_t mask = attrs[FRA_FWMASK] ? nla_get_u32(attrs[FRA_FWMASK]) : 0xffffffffu;
        std::string rule = name + " rule";
        if (attrs[FRA_PRIORITY])
          rule += " priority " + std::to_string(nla_get_u32(attrs[FRA_PRIORITY]));
        rule += " fwmark " + hex(mark) + "/" + hex(mask);
        if (attrs[FRA_TABLE]) rule += " table " + std::to_string(nla_get_u32(attrs[FRA_TABLE]));
        out.push_back({rule, mask});
        return Ok();
      });
  if (!read.ok()) {
    if (read.error().sys_errno() == EAFNOSUPPORT) return out;
    return std::move(read).error();
  }
  return out;
}

} // namespace fabric::exporters
