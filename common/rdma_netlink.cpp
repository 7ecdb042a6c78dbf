#include "common/rdma_netlink.h"

#include <array>
#include <cerrno>
#include <memory>
#include <optional>
#include <utility>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <rdma/rdma_netlink.h>

#include "common/netlink_request.h"
#include "common/netlink_socket.h"
#include "common/netns.h"

namespace fabric::rdma {
namespace {

using MsgPtr = std::unique_ptr<nl_msg, decltype(&nlmsg_free)>;
using NldevAttrs = std::array<nlattr*, RDMA_NLDEV_ATTR_MAX>;

constexpr const char* kModeHint =
    "the mode can change only while no network namespace other than the initial one "
    "exists (at boot, or with the ib_core module parameter netns_mode=0 for exclusive)";

// The attributes this file reads, with their sizes, so that a short attribute is refused
// by the parser rather than read past its end.
const nla_policy* nldev_policy() {
  static const auto policy = [] {
    std::array<nla_policy, RDMA_NLDEV_ATTR_MAX> p{};
    p[RDMA_NLDEV_ATTR_DEV_INDEX].type = NLA_U32;
    p[RDMA_NLDEV_ATTR_DEV_NAME].type = NLA_STRING;
    p[RDMA_NLDEV_SYS_ATTR_NETNS_MODE].type = NLA_U8;
    return p;
  }();
  return policy.data();
}

Result<NldevAttrs> parse_nldev(const nlmsghdr* hdr) {
  NldevAttrs tb{};
  // nldev messages carry attributes right after the netlink header: no family header.
  if (int rc = nlmsg_parse(const_cast<nlmsghdr*>(hdr), 0, tb.data(), RDMA_NLDEV_ATTR_MAX - 1,
                           const_cast<nla_policy*>(nldev_policy()));
      rc < 0) {
    return netlink::from_nl_error(rc, "parsing an RDMA netlink reply");
  }
  return tb;
}

Result<netlink::SocketPtr> connect_rdma() {
  netlink::SocketPtr sock(nl_socket_alloc());
  if (!sock) return Error::from_errno(ENOMEM, "nl_socket_alloc");
  if (int rc = nl_connect(sock.get(), NETLINK_RDMA); rc < 0) {
    // socket(NETLINK_RDMA) fails with EPROTONOSUPPORT, which libnl reports as a protocol
    // mismatch, when the RDMA core is not in the kernel.
    if (-rc == NLE_PROTO_MISMATCH) {
      return Error::from_errno(EPROTONOSUPPORT, "connecting to NETLINK_RDMA",
                               "this kernel has no RDMA subsystem")
          .with_hint("load ib_core (any RDMA driver pulls it in, e.g. `modprobe rdma_rxe`)");
    }
    return netlink::from_nl_error(rc, "connecting to NETLINK_RDMA");
  }
  netlink::request_extended_acks(sock.get());
  return sock;
}

Result<MsgPtr> new_request(int command, int flags) {
  MsgPtr msg(nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, command), flags), &nlmsg_free);
  if (!msg) return Error::from_errno(ENOMEM, "nlmsg_alloc");
  return msg;
}

Error message_too_small(const char* what) {
  return Error(ErrorCode::kInternal, what, "netlink message too small");
}

struct DeviceEntry {
  uint32_t index = 0;
  std::string name;
};

Result<std::vector<DeviceEntry>> dump_devices() {
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect_rdma());
  FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, new_request(RDMA_NLDEV_CMD_GET, NLM_F_DUMP));
  std::vector<DeviceEntry> devices;
  FABRIC_TRY(netlink::transact(
      sock.get(), msg.get(), "RDMA_NLDEV_CMD_GET (dump)", [&](const nlmsghdr* hdr) -> Result<void> {
        FABRIC_ASSIGN_OR_RETURN(NldevAttrs tb, parse_nldev(hdr));
        if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME]) {
          return Ok();
        }
        devices.push_back({nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]),
                           nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME])});
        return Ok();
      }));
  return devices;
}

} // namespace

std::string_view netns_mode_name(NetnsMode mode) {
  return mode == NetnsMode::kShared ? "shared" : "exclusive";
}

Result<NetnsMode> get_netns_mode() {
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect_rdma());
  FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, new_request(RDMA_NLDEV_CMD_SYS_GET, 0));
  std::optional<uint8_t> shared;
  FABRIC_TRY(netlink::transact(sock.get(), msg.get(), "RDMA_NLDEV_CMD_SYS_GET",
                               [&](const nlmsghdr* hdr) -> Result<void> {
                                 FABRIC_ASSIGN_OR_RETURN(NldevAttrs tb, parse_nldev(hdr));
                                 if (nlattr* a = tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]) {
                                   shared = nla_get_u8(a);
                                 }
                                 return Ok();
                               }));
  if (!shared) {
    return Error(ErrorCode::kUnsupported, "RDMA_NLDEV_CMD_SYS_GET",
                 "the kernel's reply has no netns mode (kernels before 5.2 have none)");
  }
  // The attribute is the kernel's ib_devices_shared_netns: 1 shared, 0 exclusive.
  return *shared != 0 ? NetnsMode::kShared : NetnsMode::kExclusive;
}

Result<void> set_netns_mode(NetnsMode mode) {
  const std::string what = "setting the RDMA netns mode to " + std::string(netns_mode_name(mode));
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect_rdma());
  FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, new_request(RDMA_NLDEV_CMD_SYS_SET, 0));
  if (nla_put_u8(msg.get(), RDMA_NLDEV_SYS_ATTR_NETNS_MODE, mode == NetnsMode::kShared ? 1 : 0) <
      0) {
    return message_too_small("RDMA_NLDEV_CMD_SYS_SET");
  }
  auto done = netlink::transact(sock.get(), msg.get(), "RDMA_NLDEV_CMD_SYS_SET");
  if (done.ok()) return Ok();
  const Error& e = done.error();
  if (e.sys_errno() == EBUSY) {
    return Error(ErrorCode::kTryAgain, what,
                 "the kernel refused (EBUSY): network namespaces other than the initial one "
                 "exist")
        .with_hint(kModeHint);
  }
  if (e.sys_errno() == EPERM) {
    return std::move(done).error().with_context(what).with_hint(
        "changing the RDMA netns mode needs CAP_NET_ADMIN");
  }
  return std::move(done).error().with_context(what);
}

Result<std::vector<std::string>> list_devices() {
  FABRIC_ASSIGN_OR_RETURN(auto devices, dump_devices());
  std::vector<std::string> names;
  for (auto& d : devices)
    names.push_back(std::move(d.name));
  return names;
}

Result<uint32_t> device_index(const std::string& name) {
  FABRIC_ASSIGN_OR_RETURN(auto devices, dump_devices());
  std::string seen;
  for (const auto& d : devices) {
    if (d.name == name) return d.index;
    seen += (seen.empty() ? "" : ", ") + d.name;
  }
  return Error(ErrorCode::kNotFound, "RDMA device " + name,
               "not visible in this network namespace (it sees: " +
                   (seen.empty() ? std::string("none") : seen) + ")")
      .with_hint("in exclusive netns mode a namespace sees only the devices moved into it");
}

Result<void> move_device_to_netns(const std::string& name, int netns_fd) {
  const std::string what = "moving RDMA device " + name + " to another network namespace";
  FABRIC_TRY(
      netns::check_fd(netns_fd, "network namespace fd " + std::to_string(netns_fd)).context(what));
  FABRIC_ASSIGN_OR_RETURN(uint32_t index, device_index(name).context(what));
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect_rdma());
  FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, new_request(RDMA_NLDEV_CMD_SET, 0));
  if (nla_put_u32(msg.get(), RDMA_NLDEV_ATTR_DEV_INDEX, index) < 0 ||
      nla_put_u32(msg.get(), RDMA_NLDEV_NET_NS_FD, static_cast<uint32_t>(netns_fd)) < 0) {
    return message_too_small("RDMA_NLDEV_CMD_SET");
  }
  auto done = netlink::transact(sock.get(), msg.get(), "RDMA_NLDEV_CMD_SET");
  if (done.ok()) return Ok();
  const Error& e = done.error();
  if (e.sys_errno() == EOPNOTSUPP) {
    // The kernel answers EOPNOTSUPP both in shared mode and for a driver that cannot be
    // disassociated from its user contexts; the mode tells the two apart.
    auto mode = get_netns_mode();
    if (mode.ok() && *mode == NetnsMode::kShared) {
      return std::move(done)
          .error()
          .with_context(what + ": RDMA netns mode is shared")
          .with_hint(std::string("devices move between namespaces only in exclusive mode "
                                 "(`rdma system set netns exclusive`); ") +
                     kModeHint);
    }
    return std::move(done)
        .error()
        .with_context(what + ": the driver of " + name +
                      " cannot change network namespace (the RDMA netns mode is exclusive)")
        .with_hint("the kernel moves only devices whose driver supports disassociating "
                   "user contexts; soft-RoCE (rxe) and siw do not");
  }
  if (e.sys_errno() == EPERM) {
    return std::move(done).error().with_context(what).with_hint(
        "needs CAP_NET_ADMIN over the target namespace");
  }
  return std::move(done).error().with_context(what);
}

} // namespace fabric::rdma
