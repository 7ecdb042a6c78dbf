#include "cni/link_ops.h"

#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <cerrno>
#include <charconv>
#include <climits>
#include <memory>
#include <sys/socket.h>
#include <tuple>

#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/macvlan.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>

#include "cni/names.h"
#include "common/hw_address.h"
#include "common/netlink_request.h"
#include "common/netlink_socket.h"
#include "common/netns.h"

namespace fabric::cni {
namespace {

using LinkPtr = std::unique_ptr<rtnl_link, decltype(&rtnl_link_put)>;
using MsgPtr = std::unique_ptr<nl_msg, decltype(&nlmsg_free)>;
using NlAddrPtr = std::unique_ptr<nl_addr, decltype(&nl_addr_put)>;
using AddrPtr = std::unique_ptr<rtnl_addr, decltype(&rtnl_addr_put)>;
using RoutePtr = std::unique_ptr<rtnl_route, decltype(&rtnl_route_put)>;

LinkPtr new_link(rtnl_link* raw) {
  return LinkPtr(raw, &rtnl_link_put);
}

Result<netlink::SocketPtr> connect() {
  FABRIC_ASSIGN_OR_RETURN(auto sock, netlink::connect_route());
  netlink::request_extended_acks(sock.get());
  return sock;
}

// names.h answers in the runtime's terms (kInvalidEnvironment); here a bad name is an
// argument of the call.
Result<void> check_name(const std::string& name, const std::string& field) {
  auto valid = validate_interface_name(name, field);
  if (valid.ok()) return Ok();
  return Error(ErrorCode::kInvalidArgument, valid.error().message());
}

Result<void> check_netns_fd(int fd) {
  return netns::check_fd(fd, "target network namespace fd " + std::to_string(fd));
}

// Runs `fn` in the namespace that `fd` refers to, on a thread of its own (netns::run_in).
template <typename Fn> auto run_in_fd(int fd, Fn&& fn) {
  return netns::run_in("/proc/self/fd/" + std::to_string(fd), std::forward<Fn>(fn));
}

Error not_found(const std::string& name) {
  return Error(ErrorCode::kNotFound, "link " + name, "no such link in this network namespace");
}

Result<LinkPtr> fetch_link(nl_sock* sock, const std::string& name) {
  rtnl_link* raw = nullptr;
  int rc = rtnl_link_get_kernel(sock, 0, name.c_str(), &raw);
  if (rc == -NLE_NODEV || rc == -NLE_OBJ_NOTFOUND) return not_found(name);
  if (rc < 0) return netlink::from_nl_error(rc, "reading link " + name);
  return new_link(raw);
}

LinkInfo to_info(rtnl_link* link) {
  LinkInfo info;
  info.ifindex = rtnl_link_get_ifindex(link);
  if (const char* name = rtnl_link_get_name(link)) info.name = name;
  char buf[64];
  if (nl_addr* addr = rtnl_link_get_addr(link); addr && nl_addr_get_len(addr) > 0) {
    info.mac = nl_addr2str(addr, buf, sizeof buf);
  }
  info.mtu = static_cast<int>(rtnl_link_get_mtu(link));
  info.admin_up = (rtnl_link_get_flags(link) & IFF_UP) != 0;
  info.operstate = rtnl_link_operstate2str(rtnl_link_get_operstate(link), buf, sizeof buf);
  if (const char* kind = rtnl_link_get_type(link)) info.kind = kind;
  info.parent_ifindex = rtnl_link_get_link(link);
  if (int32_t nsid = 0; rtnl_link_get_link_netnsid(link, &nsid) == 0) info.parent_netnsid = nsid;
  if (const char* alias = rtnl_link_get_ifalias(link)) info.alias = alias;
  return info;
}

// One RTM_SETLINK on link `name` carrying `changes`.
Result<void> change_link(const std::string& name, rtnl_link* changes,
                         const std::string& operation) {
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  FABRIC_ASSIGN_OR_RETURN(LinkPtr orig, fetch_link(sock.get(), name));
  nl_msg* raw = nullptr;
  if (int rc = rtnl_link_build_change_request(orig.get(), changes, 0, &raw); rc < 0) {
    return netlink::from_nl_error(rc, operation);
  }
  MsgPtr msg(raw, &nlmsg_free);
  return netlink::transact(sock.get(), msg.get(), operation);
}

// --- IP address text ---

struct IpPrefix {
  int family = AF_UNSPEC;
  std::array<uint8_t, 16> bytes{};
  int prefix = 0; // -1 for a plain address
  std::size_t size() const { return family == AF_INET ? 4 : 16; }
  int max_prefix() const { return family == AF_INET ? 32 : 128; }
};

// Strict parsing (inet_pton and a decimal prefix): libnl's own parser also takes names
// such as "default" and addresses without a prefix, which would hide mistakes.
Result<IpPrefix> parse_ip(const std::string& text, bool with_prefix, const std::string& field) {
  const char* expected = with_prefix ? "an IPv4 or IPv6 CIDR such as 10.1.2.3/24 or fd00::3/64"
                                     : "an IPv4 or IPv6 address";
  auto bad = [&] {
    return Error(ErrorCode::kInvalidArgument, field, "'" + text + "' is not " + expected);
  };
  IpPrefix ip;
  std::string address = text;
  ip.prefix = -1;
  if (with_prefix) {
    auto slash = text.find('/');
    if (slash == std::string::npos) return bad();
    address = text.substr(0, slash);
    const std::string len = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), ip.prefix);
    if (len.empty() || ec != std::errc() || end != len.data() + len.size()) return bad();
  }
  if (inet_pton(AF_INET, address.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET;
  } else if (inet_pton(AF_INET6, address.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET6;
  } else {
    return bad();
  }
  if (with_prefix && (ip.prefix < 0 || ip.prefix > ip.max_prefix())) return bad();
  return ip;
}

std::string format_ip(int family, const void* bytes, int prefix) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, bytes, buf, sizeof buf);
  std::string text = buf;
  if (prefix >= 0) text += "/" + std::to_string(prefix);
  return text;
}

Result<NlAddrPtr> to_nl_addr(const IpPrefix& ip) {
  NlAddrPtr addr(nl_addr_build(ip.family, ip.bytes.data(), ip.size()), &nl_addr_put);
  if (!addr) return Error::from_errno(ENOMEM, "nl_addr_build");
  nl_addr_set_prefixlen(addr.get(), ip.prefix >= 0 ? ip.prefix : ip.max_prefix());
  return addr;
}

// A route's destination as CIDR text; libnl leaves it out for a default route.
std::string route_dst_text(rtnl_route* route) {
  const int family = rtnl_route_get_family(route);
  nl_addr* dst = rtnl_route_get_dst(route);
  if (dst == nullptr || nl_addr_get_len(dst) == 0) {
    return family == AF_INET ? "0.0.0.0/0" : "::/0";
  }
  return format_ip(family, nl_addr_get_binary_addr(dst),
                   static_cast<int>(nl_addr_get_prefixlen(dst)));
}

uint32_t macvlan_mode_value(MacvlanMode mode) {
  switch (mode) {
  case MacvlanMode::kBridge: return MACVLAN_MODE_BRIDGE;
  case MacvlanMode::kPrivate: return MACVLAN_MODE_PRIVATE;
  case MacvlanMode::kVepa: return MACVLAN_MODE_VEPA;
  case MacvlanMode::kPassthru: return MACVLAN_MODE_PASSTHRU;
  }
  return MACVLAN_MODE_BRIDGE;
}

// The single request behind move_link: IFLA_NET_NS_FD and IFLA_IFNAME together.
Result<void> send_move(const std::string& name, int target_netns_fd, const std::string& new_name) {
  LinkPtr changes = new_link(rtnl_link_alloc());
  if (!changes) return Error::from_errno(ENOMEM, "rtnl_link_alloc");
  rtnl_link_set_ns_fd(changes.get(), target_netns_fd);
  rtnl_link_set_name(changes.get(), new_name.c_str());
  return change_link(name, changes.get(), "RTM_SETLINK (IFLA_NET_NS_FD, IFLA_IFNAME)");
}

} // namespace

Result<LinkInfo> get_link(const std::string& name) {
  FABRIC_TRY(check_name(name, "link name"));
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  FABRIC_ASSIGN_OR_RETURN(LinkPtr link, fetch_link(sock.get(), name));
  return to_info(link.get());
}

Result<std::optional<LinkInfo>> find_link(const std::string& name) {
  auto link = get_link(name);
  if (link.ok()) return std::optional<LinkInfo>(std::move(link).value());
  if (link.error().code() == ErrorCode::kNotFound) return std::optional<LinkInfo>();
  return std::move(link).error();
}

Result<std::vector<LinkInfo>> list_links() {
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  FABRIC_ASSIGN_OR_RETURN(netlink::CachePtr cache, netlink::read_links(sock.get()));
  std::vector<LinkInfo> links;
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
       obj = nl_cache_get_next(obj)) {
    links.push_back(to_info(reinterpret_cast<rtnl_link*>(obj)));
  }
  return links;
}

Result<std::optional<int32_t>> netns_id_of(int netns_fd) {
  const std::string what = "RTM_GETNSID for network namespace fd " + std::to_string(netns_fd);
  FABRIC_TRY(check_netns_fd(netns_fd).context(what));
  MsgPtr msg(nlmsg_alloc_simple(RTM_GETNSID, 0), &nlmsg_free);
  if (!msg) return Error::from_errno(ENOMEM, "nlmsg_alloc_simple");
  rtgenmsg header{};
  header.rtgen_family = AF_UNSPEC;
  if (nlmsg_append(msg.get(), &header, sizeof header, NLMSG_ALIGNTO) < 0 ||
      nla_put_u32(msg.get(), NETNSA_FD, static_cast<uint32_t>(netns_fd)) < 0) {
    return Error::from_errno(ENOMEM, what, "building the request");
  }
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  std::optional<int32_t> id;
  FABRIC_TRY(
      netlink::transact(sock.get(), msg.get(), what, [&](const nlmsghdr* reply) -> Result<void> {
        if (reply->nlmsg_type != RTM_NEWNSID) return Ok();
        nlattr* tb[NETNSA_MAX + 1] = {};
        if (nlmsg_parse(const_cast<nlmsghdr*>(reply), sizeof(rtgenmsg), tb, NETNSA_MAX, nullptr) <
            0) {
          return Error(ErrorCode::kDecode, what, "malformed RTM_NEWNSID reply");
        }
        if (tb[NETNSA_NSID] != nullptr) {
          auto nsid = static_cast<int32_t>(nla_get_u32(tb[NETNSA_NSID]));
          if (nsid != NETNSA_NSID_NOT_ASSIGNED) id = nsid;
        }
        return Ok();
      }));
  return id;
}

Result<void> create_macvlan(const std::string& parent, int target_netns_fd, const std::string& name,
                            MacvlanMode mode, std::optional<int> mtu) {
  const std::string what = "creating macvlan " + name + " on " + parent;
  FABRIC_TRY(check_name(name, "macvlan name").context(what));
  FABRIC_TRY(check_name(parent, "macvlan parent").context(what));
  FABRIC_TRY(check_netns_fd(target_netns_fd).context(what));
  FABRIC_ASSIGN_OR_RETURN(LinkInfo lower, get_link(parent).context(what));
  if (mtu && (*mtu <= 0 || *mtu > lower.mtu)) {
    return Error(ErrorCode::kInvalidArgument, what,
                 "MTU " + std::to_string(*mtu) + " is not possible: a macvlan's MTU must be " +
                     "positive and at most its parent's (" + parent + ": " +
                     std::to_string(lower.mtu) + ")");
  }

  LinkPtr link = new_link(rtnl_link_macvlan_alloc());
  if (!link) return Error::from_errno(ENOMEM, "rtnl_link_macvlan_alloc");
  rtnl_link_set_name(link.get(), name.c_str());
  rtnl_link_set_link(link.get(), lower.ifindex);
  rtnl_link_set_ns_fd(link.get(), target_netns_fd);
  if (int rc = rtnl_link_macvlan_set_mode(link.get(), macvlan_mode_value(mode)); rc < 0) {
    return netlink::from_nl_error(rc, what);
  }
  if (mtu) rtnl_link_set_mtu(link.get(), static_cast<unsigned int>(*mtu));

  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  nl_msg* raw = nullptr;
  // NLM_F_EXCL matters beyond the error: without it the kernel would take an existing
  // link of that name in THIS namespace as the one to change, and move it.
  if (int rc = rtnl_link_build_add_request(link.get(), NLM_F_CREATE | NLM_F_EXCL, &raw); rc < 0) {
    return netlink::from_nl_error(rc, what);
  }
  MsgPtr msg(raw, &nlmsg_free);
  auto created = netlink::transact(sock.get(), msg.get(), "RTM_NEWLINK");
  if (created.ok()) return Ok();
  if (created.error().sys_errno() == EEXIST) {
    // Older kernels look the name up in the caller's namespace before creating the link
    // in the target, where it must be free too.
    auto here = find_link(name);
    const bool in_caller = here.ok() && here->has_value();
    return Error(ErrorCode::kAlreadyExists, what,
                 "a link named " + name + " already exists in " +
                     (in_caller ? "this (the parent's) network namespace"
                                : "the target network namespace"))
        .with_hint(in_caller ? "this kernel requires the new name to be free in both namespaces; "
                               "create the macvlan under a temporary name and rename it inside"
                             : "");
  }
  if (created.error().sys_errno() == EINVAL) {
    // The kernel refuses passthru sharing with a bare EINVAL.
    return std::move(created).error().with_context(what).with_hint(
        "a passthru macvlan must be its parent's only macvlan: either " + parent +
        " already has one in passthru mode, or passthru was asked for on a parent that "
        "already has macvlans; use another parent or mode \"bridge\"");
  }
  return std::move(created).error().with_context(what);
}

Result<void> rename_link(const std::string& from, const std::string& to) {
  const std::string what = "renaming link " + from + " to " + to;
  FABRIC_TRY(check_name(from, "link name").context(what));
  FABRIC_TRY(check_name(to, "new link name").context(what));
  LinkPtr changes = new_link(rtnl_link_alloc());
  if (!changes) return Error::from_errno(ENOMEM, "rtnl_link_alloc");
  rtnl_link_set_name(changes.get(), to.c_str());
  auto renamed = change_link(from, changes.get(), "RTM_SETLINK (IFLA_IFNAME)");
  if (renamed.ok()) return Ok();
  switch (renamed.error().sys_errno()) {
  case EEXIST:
    return Error(ErrorCode::kAlreadyExists, what,
                 "a link named " + to + " already exists in this network namespace");
  case EBUSY:
    return Error(ErrorCode::kInvalidArgument, what,
                 from + " is up, and the kernel renames only links that are down (EBUSY)");
  default: return std::move(renamed).error().with_context(what);
  }
}

Result<void> set_link_mac(const std::string& name, const std::string& mac) {
  const std::string what = "setting the MAC address of " + name + " to " + mac;
  FABRIC_TRY(check_name(name, "link name").context(what));
  FABRIC_ASSIGN_OR_RETURN(MacAddress bytes, parse_mac(mac).context(what));
  if (!is_unicast_mac(bytes)) {
    return Error(ErrorCode::kInvalidArgument, what,
                 "'" + mac + "' is a multicast or all-zero address; a link needs a unicast one");
  }
  NlAddrPtr addr(nl_addr_build(AF_LLC, bytes.data(), bytes.size()), &nl_addr_put);
  if (!addr) return Error::from_errno(ENOMEM, "nl_addr_build");
  LinkPtr changes = new_link(rtnl_link_alloc());
  if (!changes) return Error::from_errno(ENOMEM, "rtnl_link_alloc");
  rtnl_link_set_addr(changes.get(), addr.get());
  return change_link(name, changes.get(), "RTM_SETLINK (IFLA_ADDRESS)").context(what);
}

Result<void> set_link_mtu(const std::string& name, int mtu) {
  const std::string what = "setting the MTU of " + name + " to " + std::to_string(mtu);
  FABRIC_TRY(check_name(name, "link name").context(what));
  if (mtu <= 0) return Error(ErrorCode::kInvalidArgument, what, "an MTU must be positive");
  LinkPtr changes = new_link(rtnl_link_alloc());
  if (!changes) return Error::from_errno(ENOMEM, "rtnl_link_alloc");
  rtnl_link_set_mtu(changes.get(), static_cast<unsigned int>(mtu));
  auto set = change_link(name, changes.get(), "RTM_SETLINK (IFLA_MTU)");
  if (set.ok()) return Ok();
  if (set.error().sys_errno() == EINVAL) {
    return std::move(set).error().with_context(what).with_hint(
        "the MTU is outside what the link allows; a macvlan's MTU cannot exceed its "
        "parent's");
  }
  return std::move(set).error().with_context(what);
}

Result<void> set_link_up(const std::string& name, bool up) {
  const std::string what = std::string(up ? "bringing up " : "bringing down ") + name;
  FABRIC_TRY(check_name(name, "link name").context(what));
  LinkPtr changes = new_link(rtnl_link_alloc());
  if (!changes) return Error::from_errno(ENOMEM, "rtnl_link_alloc");
  if (up) {
    rtnl_link_set_flags(changes.get(), IFF_UP);
  } else {
    rtnl_link_unset_flags(changes.get(), IFF_UP);
  }
  return change_link(name, changes.get(), "RTM_SETLINK (IFF_UP)").context(what);
}

Result<void> set_link_alias(const std::string& name, const std::string& alias) {
  const std::string what = "setting the alias of " + name + " to '" + alias + "'";
  FABRIC_TRY(check_name(name, "link name").context(what));
  // IFALIASZ (256) counts the terminating NUL; the kernel refuses a longer one with EINVAL.
  if (alias.size() > 255 || alias.find('\0') != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, what, "an alias is at most 255 bytes, without NUL");
  }
  LinkPtr changes = new_link(rtnl_link_alloc());
  if (!changes) return Error::from_errno(ENOMEM, "rtnl_link_alloc");
  rtnl_link_set_ifalias(changes.get(), alias.c_str());
  return change_link(name, changes.get(), "RTM_SETLINK (IFLA_IFALIAS)").context(what);
}

Result<void> delete_link(const std::string& name) {
  const std::string what = "deleting link " + name;
  FABRIC_TRY(check_name(name, "link name").context(what));
  LinkPtr link = new_link(rtnl_link_alloc());
  if (!link) return Error::from_errno(ENOMEM, "rtnl_link_alloc");
  rtnl_link_set_name(link.get(), name.c_str());
  nl_msg* raw = nullptr;
  if (int rc = rtnl_link_build_delete_request(link.get(), &raw); rc < 0) {
    return netlink::from_nl_error(rc, what);
  }
  MsgPtr msg(raw, &nlmsg_free);
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  auto deleted = netlink::transact(sock.get(), msg.get(), "RTM_DELLINK");
  if (deleted.ok()) return Ok();
  switch (deleted.error().sys_errno()) {
  case ENODEV: return not_found(name).with_context(what);
  case EOPNOTSUPP:
    return std::move(deleted).error().with_context(what).with_hint(
        name + " is not a virtual link; only virtual links (macvlan, veth, ...) can be deleted");
  default: return std::move(deleted).error().with_context(what);
  }
}

Result<void> move_link(const std::string& name, int target_netns_fd, const std::string& new_name) {
  const std::string what = "moving link " + name + " to network namespace fd " +
                           std::to_string(target_netns_fd) + " as " + new_name;
  FABRIC_TRY(check_name(name, "link name").context(what));
  FABRIC_TRY(check_name(new_name, "new link name").context(what));
  FABRIC_TRY(check_netns_fd(target_netns_fd).context(what));
  FABRIC_TRY(get_link(name).context(what));
  FABRIC_ASSIGN_OR_RETURN(UniqueFd here, netns::open_current());
  FABRIC_ASSIGN_OR_RETURN(bool same, netns::same(here.get(), target_netns_fd));
  if (same) {
    if (name == new_name) return Ok();
    return rename_link(name, new_name).context(what);
  }

  auto clash_error = [&] {
    return Error(ErrorCode::kAlreadyExists, what,
                 "a link named " + new_name + " already exists in the target network " +
                     "namespace; " + name + " was not moved");
  };
  FABRIC_ASSIGN_OR_RETURN(
      auto taken, run_in_fd(target_netns_fd, [&] { return find_link(new_name); }).context(what));
  if (taken) return clash_error();

  auto moved = send_move(name, target_netns_fd, new_name);
  if (moved.ok()) return Ok();
  if (moved.error().sys_errno() != EEXIST) {
    if (moved.error().sys_errno() == EINVAL) {
      return std::move(moved).error().with_context(what).with_hint(
          "some links cannot change namespace (loopback, bridges and other netns-local "
          "devices)");
    }
    return std::move(moved).error().with_context(what);
  }
  // new_name was taken after the check. The kernel moves first and renames after, so the
  // link may now sit in the target under its old name: bring it back.
  FABRIC_ASSIGN_OR_RETURN(auto still_here, find_link(name).context(what));
  if (!still_here) {
    auto back = run_in_fd(target_netns_fd, [&] { return send_move(name, here.get(), name); });
    if (!back.ok()) {
      return std::move(back).error().with_context(
          what + ": " + new_name + " was taken in the target, and moving " + name + " back failed");
    }
  }
  return clash_error();
}

Result<void> add_address(const std::string& link, const std::string& cidr) {
  const std::string what = "adding address " + cidr + " to " + link;
  FABRIC_TRY(check_name(link, "link name").context(what));
  FABRIC_ASSIGN_OR_RETURN(IpPrefix ip, parse_ip(cidr, true, "address").context(what));
  FABRIC_ASSIGN_OR_RETURN(LinkInfo info, get_link(link).context(what));
  FABRIC_ASSIGN_OR_RETURN(NlAddrPtr local, to_nl_addr(ip));
  AddrPtr addr(rtnl_addr_alloc(), &rtnl_addr_put);
  if (!addr) return Error::from_errno(ENOMEM, "rtnl_addr_alloc");
  rtnl_addr_set_ifindex(addr.get(), info.ifindex);
  rtnl_addr_set_family(addr.get(), ip.family);
  if (int rc = rtnl_addr_set_local(addr.get(), local.get()); rc < 0) {
    return netlink::from_nl_error(rc, what);
  }
  rtnl_addr_set_prefixlen(addr.get(), ip.prefix);
  nl_msg* raw = nullptr;
  if (int rc = rtnl_addr_build_add_request(addr.get(), NLM_F_CREATE | NLM_F_EXCL, &raw); rc < 0) {
    return netlink::from_nl_error(rc, what);
  }
  MsgPtr msg(raw, &nlmsg_free);
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  auto added = netlink::transact(sock.get(), msg.get(), "RTM_NEWADDR");
  if (added.ok()) return Ok();
  if (added.error().sys_errno() == EEXIST) {
    return Error(ErrorCode::kAlreadyExists, what, "the address is already on " + link);
  }
  return std::move(added).error().with_context(what);
}

Result<std::vector<std::string>> list_addresses(const std::string& link) {
  const std::string what = "listing the addresses of " + link;
  FABRIC_ASSIGN_OR_RETURN(LinkInfo info, get_link(link).context(what));
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  nl_cache* raw = nullptr;
  if (int rc = rtnl_addr_alloc_cache(sock.get(), &raw); rc < 0) {
    return netlink::from_nl_error(rc, what);
  }
  netlink::CachePtr cache(raw);
  std::vector<std::string> v4, v6;
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
       obj = nl_cache_get_next(obj)) {
    auto* addr = reinterpret_cast<rtnl_addr*>(obj);
    if (rtnl_addr_get_ifindex(addr) != info.ifindex) continue;
    nl_addr* local = rtnl_addr_get_local(addr);
    if (local == nullptr) continue;
    const int family = rtnl_addr_get_family(addr);
    if (family != AF_INET && family != AF_INET6) continue;
    (family == AF_INET ? v4 : v6)
        .push_back(
            format_ip(family, nl_addr_get_binary_addr(local), rtnl_addr_get_prefixlen(addr)));
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

Result<void> add_route(const std::string& link, const RouteSpec& spec) {
  const std::string what = "adding route " + spec.dst + (spec.gw ? " via " + *spec.gw : "") +
                           (spec.table ? " table " + std::to_string(*spec.table) : "") + " on " +
                           link;
  for (auto [name, value, max] : {std::tuple{"table", spec.table, INT32_MAX},
                                  {"scope", spec.scope, 255},
                                  {"priority", spec.priority, INT32_MAX},
                                  {"mtu", spec.mtu, INT32_MAX},
                                  {"advmss", spec.advmss, INT32_MAX}}) {
    if (value && (*value < 0 || *value > max)) {
      return Error(ErrorCode::kInvalidArgument, what,
                   std::string(name) + " " + std::to_string(*value) + " is out of range");
    }
  }
  FABRIC_TRY(check_name(link, "link name").context(what));
  FABRIC_ASSIGN_OR_RETURN(IpPrefix dst,
                          parse_ip(spec.dst, true, "route destination").context(what));
  std::optional<IpPrefix> gw;
  if (spec.gw) {
    FABRIC_ASSIGN_OR_RETURN(gw, parse_ip(*spec.gw, false, "route gateway").context(what));
    if (gw->family != dst.family) {
      return Error(ErrorCode::kInvalidArgument, what,
                   "the gateway and the destination are of different address families");
    }
  }
  FABRIC_ASSIGN_OR_RETURN(LinkInfo info, get_link(link).context(what));

  RoutePtr route(rtnl_route_alloc(), &rtnl_route_put);
  if (!route) return Error::from_errno(ENOMEM, "rtnl_route_alloc");
  rtnl_route_set_family(route.get(), static_cast<uint8_t>(dst.family));
  FABRIC_ASSIGN_OR_RETURN(NlAddrPtr dst_addr, to_nl_addr(dst));
  if (int rc = rtnl_route_set_dst(route.get(), dst_addr.get()); rc < 0) {
    return netlink::from_nl_error(rc, what);
  }
  rtnl_route_set_table(route.get(), static_cast<uint32_t>(spec.table.value_or(RT_TABLE_MAIN)));
  rtnl_route_set_protocol(route.get(), RTPROT_BOOT);
  rtnl_route_set_type(route.get(), RTN_UNICAST);
  rtnl_route_set_scope(route.get(), static_cast<uint8_t>(spec.scope.value_or(gw ? RT_SCOPE_UNIVERSE
                                                                                : RT_SCOPE_LINK)));
  if (spec.priority) rtnl_route_set_priority(route.get(), static_cast<uint32_t>(*spec.priority));
  for (auto [metric, value] : {std::pair{RTAX_MTU, spec.mtu}, {RTAX_ADVMSS, spec.advmss}}) {
    if (!value || *value == 0) continue; // 0 is the spec's "unset"
    if (int rc = rtnl_route_set_metric(route.get(), metric, static_cast<unsigned>(*value));
        rc < 0) {
      return netlink::from_nl_error(rc, what);
    }
  }
  rtnl_nexthop* nh = rtnl_route_nh_alloc();
  if (nh == nullptr) return Error::from_errno(ENOMEM, "rtnl_route_nh_alloc");
  rtnl_route_nh_set_ifindex(nh, info.ifindex);
  rtnl_route_add_nexthop(route.get(), nh); // the route owns it from here
  if (gw) {
    FABRIC_ASSIGN_OR_RETURN(NlAddrPtr gw_addr, to_nl_addr(*gw));
    rtnl_route_nh_set_gateway(nh, gw_addr.get());
  }
  nl_msg* raw = nullptr;
  if (int rc = rtnl_route_build_add_request(route.get(), NLM_F_CREATE | NLM_F_EXCL, &raw); rc < 0) {
    return netlink::from_nl_error(rc, what);
  }
  MsgPtr msg(raw, &nlmsg_free);
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  auto added = netlink::transact(sock.get(), msg.get(), "RTM_NEWROUTE");
  if (added.ok()) return Ok();
  switch (added.error().sys_errno()) {
  case EEXIST: return Error(ErrorCode::kAlreadyExists, what, "the route already exists");
  case ENETDOWN:
    return std::move(added).error().with_context(what).with_hint(
        "bring " + link + " up before adding routes through it");
  case ENETUNREACH:
    return std::move(added).error().with_context(what).with_hint(
        "no address on " + link + " covers the gateway; add the address first");
  default: return std::move(added).error().with_context(what);
  }
}

Result<std::vector<RouteSpec>> list_routes(const std::string& link) {
  const std::string what = "listing the routes through " + link;
  FABRIC_ASSIGN_OR_RETURN(LinkInfo info, get_link(link).context(what));
  FABRIC_ASSIGN_OR_RETURN(auto sock, connect());
  nl_cache* raw = nullptr;
  if (int rc = rtnl_route_alloc_cache(sock.get(), AF_UNSPEC, 0, &raw); rc < 0) {
    return netlink::from_nl_error(rc, what);
  }
  netlink::CachePtr cache(raw);
  std::vector<RouteSpec> routes;
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
       obj = nl_cache_get_next(obj)) {
    auto* route = reinterpret_cast<rtnl_route*>(obj);
    if (rtnl_route_get_table(route) != RT_TABLE_MAIN) continue;
    if (rtnl_route_get_type(route) != RTN_UNICAST) continue;
    for (int i = 0; i < rtnl_route_get_nnexthops(route); ++i) {
      rtnl_nexthop* nh = rtnl_route_nexthop_n(route, i);
      if (rtnl_route_nh_get_ifindex(nh) != info.ifindex) continue;
      RouteSpec spec{route_dst_text(route), std::nullopt};
      if (nl_addr* gw = rtnl_route_nh_get_gateway(nh); gw && nl_addr_get_len(gw) > 0) {
        spec.gw = format_ip(nl_addr_get_family(gw), nl_addr_get_binary_addr(gw), -1);
      }
      routes.push_back(std::move(spec));
    }
  }
  return routes;
}

} // namespace fabric::cni
