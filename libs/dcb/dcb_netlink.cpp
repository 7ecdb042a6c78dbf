#include "libs/dcb/dcb_netlink.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <poll.h>

#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "common/netlink_socket.h"
#include "libs/dcb/dcb_codec.h"

namespace fabric::pfc {
namespace {

using MsgPtr = std::unique_ptr<nl_msg, decltype(&nlmsg_free)>;

// What one request/response exchange yields: the reply's attributes (copied), or the
// kernel's errno from NLMSG_ERROR.
struct Exchange {
  int kernel_errno = 0;
  std::vector<uint8_t> reply; // the reply's netlink message, whole
};

using DcbAttrs = std::array<nlattr*, DCB_ATTR_MAX + 1>;

// The top-level attributes of a DCB message, after its dcbmsg header.
int parse_dcb_attrs(const nlmsghdr* hdr, DcbAttrs& tb) {
  tb.fill(nullptr);
  return nlmsg_parse(const_cast<nlmsghdr*>(hdr), sizeof(dcbmsg), tb.data(), DCB_ATTR_MAX, nullptr);
}

// The u8 attribute `type` of an exchange's reply; nullopt when there is no such reply.
std::optional<uint8_t> reply_u8(const Exchange& ex, int type) {
  if (ex.reply.empty()) return std::nullopt;
  DcbAttrs tb;
  if (parse_dcb_attrs(reinterpret_cast<const nlmsghdr*>(ex.reply.data()), tb) < 0 || !tb[type]) {
    return std::nullopt;
  }
  return nla_get_u8(tb[type]);
}

Result<MsgPtr> new_request(int type, uint8_t cmd, const std::string& dev) {
  MsgPtr msg(nlmsg_alloc_simple(type, NLM_F_REQUEST), &nlmsg_free);
  if (!msg) return Error::from_errno(ENOMEM, "nlmsg_alloc");
  dcbmsg header{};
  header.dcb_family = AF_UNSPEC;
  header.cmd = cmd;
  if (nlmsg_append(msg.get(), &header, sizeof header, NLMSG_ALIGNTO) < 0 ||
      nla_put_string(msg.get(), DCB_ATTR_IFNAME, dev.c_str()) < 0) {
    return Error(ErrorCode::kInternal, "building DCB request", "message too small");
  }
  return msg;
}

int on_error(sockaddr_nl*, nlmsgerr* err, void* arg) {
  static_cast<Exchange*>(arg)->kernel_errno = -err->error;
  return NL_STOP;
}

int on_reply(nl_msg* msg, void* arg) {
  nlmsghdr* hdr = nlmsg_hdr(msg);
  auto* ex = static_cast<Exchange*>(arg);
  const auto* bytes = reinterpret_cast<const uint8_t*>(hdr);
  ex->reply.assign(bytes, bytes + hdr->nlmsg_len);
  return NL_OK;
}

// Sends `msg` and collects the reply. Kernel errors keep their errno so that EOPNOTSUPP
// (no DCB ops), ENODEV and EPERM reach the user as such.
Result<Exchange> exchange(nl_msg* msg, const std::string& what) {
  FABRIC_ASSIGN_OR_RETURN(auto sock, netlink::connect_route());
  // Every DCB command answers with a message of its own (or NLMSG_ERROR): no ACK asked,
  // so a single receive sees the whole exchange.
  nl_socket_disable_auto_ack(sock.get());
  Exchange ex;
  nl_socket_modify_cb(sock.get(), NL_CB_VALID, NL_CB_CUSTOM, on_reply, &ex);
  nl_socket_modify_err_cb(sock.get(), NL_CB_CUSTOM, on_error, &ex);
  if (int rc = nl_send_auto(sock.get(), msg); rc < 0) return netlink::from_nl_error(rc, what);
  int rc = nl_recvmsgs_default(sock.get());
  if (ex.kernel_errno != 0) return Error::from_errno(ex.kernel_errno, what);
  if (rc < 0) return netlink::from_nl_error(rc, what);
  return ex;
}

Error dcb_error(Error e, const std::string& dev) {
  if (e.sys_errno() == EOPNOTSUPP) {
    return std::move(e).with_context(dev).with_hint(
        dev + " does not support DCB (its driver has no dcbnl ops; software "
              "devices such as veth never do)");
  }
  if (e.sys_errno() == ENODEV) return std::move(e).with_context("no network device " + dev);
  if (e.sys_errno() == EPERM) {
    return std::move(e).with_context(dev).with_hint("changing DCB needs CAP_NET_ADMIN");
  }
  return std::move(e).with_context(dev);
}

Result<std::vector<AppEntry>> decode_app_table(nlattr* table, const char* name) {
  std::vector<AppEntry> apps;
  nlattr* entry;
  int rem;
  nla_for_each_nested(entry, table, rem) {
    if (nla_type(entry) != DCB_ATTR_IEEE_APP) continue; // e.g. DCB_ATTR_DCB_APP_TRUST
    FABRIC_ASSIGN_OR_RETURN(AppEntry app, codec::decode_app(nla_data(entry), nla_len(entry), name));
    apps.push_back(app);
  }
  std::sort(apps.begin(), apps.end());
  return apps;
}

// Decodes one struct attribute, when present, into `out`.
template <typename T>
Result<void> decode_struct(nlattr* attr, std::optional<T>& out,
                           Result<T> (*decode)(const void*, std::size_t, const char*),
                           const char* name) {
  if (attr == nullptr) return Ok();
  FABRIC_ASSIGN_OR_RETURN(out,
                          decode(nla_data(attr), static_cast<std::size_t>(nla_len(attr)), name));
  return Ok();
}

} // namespace

namespace detail {

Result<DcbState> decode_state(const nlmsghdr* hdr) {
  DcbAttrs tb;
  if (int rc = parse_dcb_attrs(hdr, tb); rc < 0) {
    return netlink::from_nl_error(rc, "parsing DCB reply");
  }
  DcbState state;
  if (tb[DCB_ATTR_DCBX]) state.dcbx = nla_get_u8(tb[DCB_ATTR_DCBX]);
  if (!tb[DCB_ATTR_IEEE]) return state;
  nlattr* ieee[DCB_ATTR_IEEE_MAX + 1] = {};
  if (int rc = nla_parse_nested(ieee, DCB_ATTR_IEEE_MAX, tb[DCB_ATTR_IEEE], nullptr); rc < 0) {
    return netlink::from_nl_error(rc, "parsing DCB_ATTR_IEEE");
  }
  FABRIC_TRY(
      decode_struct(ieee[DCB_ATTR_IEEE_PFC], state.pfc, codec::decode_pfc, "DCB_ATTR_IEEE_PFC"));
  FABRIC_TRY(
      decode_struct(ieee[DCB_ATTR_IEEE_ETS], state.ets, codec::decode_ets, "DCB_ATTR_IEEE_ETS"));
  FABRIC_TRY(decode_struct(ieee[DCB_ATTR_IEEE_MAXRATE], state.maxrate, codec::decode_maxrate,
                           "DCB_ATTR_IEEE_MAXRATE"));
  FABRIC_TRY(decode_struct(ieee[DCB_ATTR_DCB_BUFFER], state.buffer, codec::decode_buffer,
                           "DCB_ATTR_DCB_BUFFER"));
  FABRIC_TRY(decode_struct(ieee[DCB_ATTR_IEEE_PEER_PFC], state.peer_pfc, codec::decode_pfc,
                           "DCB_ATTR_IEEE_PEER_PFC"));
  FABRIC_TRY(decode_struct(ieee[DCB_ATTR_IEEE_PEER_ETS], state.peer_ets, codec::decode_ets,
                           "DCB_ATTR_IEEE_PEER_ETS"));
  if (nlattr* a = ieee[DCB_ATTR_IEEE_APP_TABLE]) {
    FABRIC_ASSIGN_OR_RETURN(state.apps, decode_app_table(a, "DCB_ATTR_IEEE_APP"));
  }
  if (nlattr* a = ieee[DCB_ATTR_IEEE_PEER_APP]) {
    FABRIC_ASSIGN_OR_RETURN(state.peer_apps, decode_app_table(a, "DCB_ATTR_IEEE_PEER_APP"));
  }
  return state;
}

} // namespace detail

namespace {

using detail::decode_state;

// Reads the one-byte in-band status of an IEEE set/del reply.
Result<void> check_inband_status(const Exchange& ex, int attribute, const std::string& what) {
  std::optional<uint8_t> status = reply_u8(ex, attribute);
  if (!status) return Ok();
  int err = codec::errno_from_inband_status(*status);
  if (err == 0) return Ok();
  return Error::from_errno(err, what, "the kernel accepted the message but the driver failed it");
}

template <typename Struct> bool put_struct(nl_msg* msg, int type, const Struct& s) {
  return nla_put(msg, type, sizeof s, &s) == 0;
}

bool put_app_table(nl_msg* msg, const std::vector<AppEntry>& apps) {
  nlattr* table = nla_nest_start(msg, DCB_ATTR_IEEE_APP_TABLE);
  if (table == nullptr) return false;
  for (const auto& app : apps) {
    if (!put_struct(msg, DCB_ATTR_IEEE_APP, codec::to_kernel(app))) return false;
  }
  nla_nest_end(msg, table);
  return true;
}

// One IEEE set or delete: the structs that change, and APP entries, nested in
// DCB_ATTR_IEEE, as dcbnl_ieee_set/dcbnl_ieee_del expect them.
Result<MsgPtr> build_ieee_message(const std::string& dev, uint8_t cmd, const DcbChange& change,
                                  const std::vector<AppEntry>& apps) {
  FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, new_request(RTM_SETDCB, cmd, dev));
  nlattr* ieee = nla_nest_start(msg.get(), DCB_ATTR_IEEE);
  bool ok = ieee != nullptr;
  if (ok && change.ets)
    ok = put_struct(msg.get(), DCB_ATTR_IEEE_ETS, codec::to_kernel(*change.ets));
  if (ok && change.pfc)
    ok = put_struct(msg.get(), DCB_ATTR_IEEE_PFC, codec::to_kernel(*change.pfc));
  if (ok && change.maxrate) {
    ok = put_struct(msg.get(), DCB_ATTR_IEEE_MAXRATE, codec::to_kernel(*change.maxrate));
  }
  if (ok && change.buffer) {
    ok = put_struct(msg.get(), DCB_ATTR_DCB_BUFFER, codec::to_kernel(*change.buffer));
  }
  if (ok && !apps.empty()) ok = put_app_table(msg.get(), apps);
  if (!ok) return Error(ErrorCode::kInternal, "building DCB IEEE message", "message too small");
  nla_nest_end(msg.get(), ieee);
  return msg;
}

class NetlinkDcbDevice final : public DcbDevice {
public:
  Result<DcbState> read(const std::string& dev) override {
    FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, new_request(RTM_GETDCB, DCB_CMD_IEEE_GET, dev));
    auto ex = exchange(msg.get(), "DCB_CMD_IEEE_GET");
    if (!ex.ok()) return dcb_error(std::move(ex).error(), dev);
    if (ex->reply.empty()) {
      return Error(ErrorCode::kSystem, "DCB_CMD_IEEE_GET", "the kernel sent no reply");
    }
    FABRIC_ASSIGN_OR_RETURN(DcbState state,
                            decode_state(reinterpret_cast<const nlmsghdr*>(ex->reply.data())));
    if (!state.dcbx) {
      // Older kernels put DCBX only in its own command's reply.
      auto dcbx = read_dcbx(dev);
      if (dcbx.ok()) state.dcbx = *dcbx;
    }
    return state;
  }

  Result<void> write(const std::string& dev, const DcbChange& change) override {
    // Deletes first: drivers such as mlx5 keep one priority per DSCP and replace it on
    // add, after which deleting the old "26:0" fails with ENOENT.
    if (!change.app_del.empty()) {
      FABRIC_TRY(ieee_command(dev, DCB_CMD_IEEE_DEL, DcbChange{}, change.app_del));
    }
    bool has_set =
        change.pfc || change.ets || change.maxrate || change.buffer || !change.app_add.empty();
    if (has_set) FABRIC_TRY(ieee_command(dev, DCB_CMD_IEEE_SET, change, change.app_add));
    if (change.dcbx) FABRIC_TRY(set_dcbx(dev, *change.dcbx));
    return Ok();
  }

private:
  Result<void> ieee_command(const std::string& dev, uint8_t cmd, const DcbChange& change,
                            const std::vector<AppEntry>& apps) {
    const char* name = cmd == DCB_CMD_IEEE_SET ? "DCB_CMD_IEEE_SET" : "DCB_CMD_IEEE_DEL";
    FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, build_ieee_message(dev, cmd, change, apps));
    auto ex = exchange(msg.get(), name);
    if (!ex.ok()) return dcb_error(std::move(ex).error(), dev);
    auto status = check_inband_status(*ex, DCB_ATTR_IEEE, name);
    if (!status.ok()) return dcb_error(std::move(status).error(), dev);
    return Ok();
  }

  Result<uint8_t> read_dcbx(const std::string& dev) {
    FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, new_request(RTM_GETDCB, DCB_CMD_GDCBX, dev));
    FABRIC_ASSIGN_OR_RETURN(Exchange ex, exchange(msg.get(), "DCB_CMD_GDCBX"));
    std::optional<uint8_t> mode = reply_u8(ex, DCB_ATTR_DCBX);
    if (!mode) return Error(ErrorCode::kUnsupported, "DCB_CMD_GDCBX", "no DCBX mode reported");
    return *mode;
  }

  Result<void> set_dcbx(const std::string& dev, uint8_t mode) {
    FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, new_request(RTM_SETDCB, DCB_CMD_SDCBX, dev));
    if (nla_put_u8(msg.get(), DCB_ATTR_DCBX, mode) < 0) {
      return Error(ErrorCode::kInternal, "DCB_CMD_SDCBX", "message too small");
    }
    auto ex = exchange(msg.get(), "DCB_CMD_SDCBX");
    if (!ex.ok()) return dcb_error(std::move(ex).error(), dev);
    // SDCBX answers with DCB_ATTR_DCBX = 0 on success, 1 when the driver refused the mode.
    if (reply_u8(*ex, DCB_ATTR_DCBX).value_or(0) != 0) {
      return Error(ErrorCode::kUnsupported, "DCB_CMD_SDCBX",
                   dev + " refused DCBX mode " + std::to_string(mode));
    }
    return Ok();
  }
};

} // namespace

namespace detail {
Result<std::vector<uint8_t>> build_ieee_request(const std::string& dev, uint8_t cmd,
                                                const DcbChange& change,
                                                const std::vector<AppEntry>& apps) {
  FABRIC_ASSIGN_OR_RETURN(MsgPtr msg, build_ieee_message(dev, cmd, change, apps));
  const nlmsghdr* hdr = nlmsg_hdr(msg.get());
  const auto* bytes = reinterpret_cast<const uint8_t*>(hdr);
  return std::vector<uint8_t>(bytes, bytes + hdr->nlmsg_len);
}
} // namespace detail

std::unique_ptr<DcbDevice> make_netlink_dcb_device() {
  return std::make_unique<NetlinkDcbDevice>();
}

Result<void> watch_dcb(const std::string& dev, const std::function<bool(const DcbEvent&)>& on_event,
                       const std::function<bool()>& keep_going,
                       std::chrono::milliseconds poll_interval) {
  FABRIC_ASSIGN_OR_RETURN(auto sock, netlink::connect_route());
  nl_socket_disable_seq_check(sock.get());
  if (int rc = nl_socket_add_membership(sock.get(), RTNLGRP_DCB); rc < 0) {
    return netlink::from_nl_error(rc, "joining the DCB multicast group");
  }
  struct Context {
    const std::string* dev;
    const std::function<bool(const DcbEvent&)>* on_event;
    bool stop = false;
    std::optional<Error> error;
  } ctx{&dev, &on_event, false, std::nullopt};
  auto on_msg = [](nl_msg* msg, void* arg) -> int {
    auto* c = static_cast<Context*>(arg);
    nlmsghdr* hdr = nlmsg_hdr(msg);
    if (hdr->nlmsg_type != RTM_GETDCB && hdr->nlmsg_type != RTM_SETDCB) return NL_SKIP;
    DcbAttrs tb;
    if (parse_dcb_attrs(hdr, tb) < 0 || !tb[DCB_ATTR_IFNAME]) {
      return NL_SKIP;
    }
    DcbEvent event;
    event.dev = nla_get_string(tb[DCB_ATTR_IFNAME]);
    if (!c->dev->empty() && event.dev != *c->dev) return NL_SKIP;
    auto state = decode_state(hdr);
    if (!state.ok()) {
      c->error = state.error();
      c->stop = true;
      return NL_STOP;
    }
    event.state = std::move(*state);
    if (!(*c->on_event)(event)) c->stop = true;
    return NL_OK;
  };
  nl_socket_modify_cb(sock.get(), NL_CB_VALID, NL_CB_CUSTOM, on_msg, &ctx);
  pollfd pfd{nl_socket_get_fd(sock.get()), POLLIN, 0};
  while (!ctx.stop && keep_going()) {
    int ready = poll(&pfd, 1, static_cast<int>(poll_interval.count()));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno(errno, "poll on the DCB multicast socket");
    }
    if (ready == 0) continue;
    if (int rc = nl_recvmsgs_default(sock.get()); rc < 0 && !ctx.stop) {
      return netlink::from_nl_error(rc, "receiving DCB notifications");
    }
  }
  if (ctx.error) return *ctx.error;
  return Ok();
}

} // namespace fabric::pfc
