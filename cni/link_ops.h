// The plugin's kernel operations on network links, addresses and routes (rtnetlink
// through libnl-route). Each is one small synchronous step; the orchestrator composes
// them and rolls back.
//
// Every function acts in the CALLING THREAD's network namespace unless it takes a
// namespace fd; pod-side steps are wrapped in fabric::netns::run_in(path, ...). Errors
// name the link (and address, route or namespace fd) they were about, and keep the
// kernel's errno and, where it gives one, its own explanation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni/modes.h"
#include "common/result.h"

namespace fabric::cni {

struct LinkInfo {
  int ifindex = 0;
  std::string name, mac; // mac: lower-case "aa:bb:cc:dd:ee:ff"
  int mtu = 0;
  bool admin_up = false;
  std::string operstate; // the kernel's words, as sysfs: "up", "down", "lowerlayerdown", ...
  std::string kind;      // "macvlan", "veth", ...; "" for a physical device
  // IFLA_LINK: a macvlan's parent, a veth's peer; 0 when none. It may be an index in
  // another namespace (for a macvlan in a pod, the host's): then parent_netnsid is that
  // namespace's id as this one knows it (IFLA_LINK_NETNSID, see netns_id_of).
  int parent_ifindex = 0;
  std::optional<int32_t> parent_netnsid;
  std::string alias; // IFLA_IFALIAS, "" when unset
};

// kNotFound naming the link when there is none of that name.
Result<LinkInfo> get_link(const std::string& name);
// Like get_link, but absence is std::nullopt.
Result<std::optional<LinkInfo>> find_link(const std::string& name);

// Creates macvlan `name` on `parent` (a link of the current namespace) directly inside
// the namespace `target_netns_fd` (IFLA_NET_NS_FD in the same RTM_NEWLINK), so it never
// appears in the current one. No `mtu`: the parent's; one above the parent's is refused.
// A name taken in the target is kAlreadyExists naming it. Older kernels (6.1 among them)
// also refuse a name taken in the caller's namespace; the error then says so, and the
// caller's link of that name is never touched (NLM_F_EXCL).
Result<void> create_macvlan(const std::string& parent, int target_netns_fd, const std::string& name,
                            MacvlanMode mode, std::optional<int> mtu);

// Every link of the current namespace.
Result<std::vector<LinkInfo>> list_links();

// The id the current namespace gives the namespace `netns_fd` (RTM_GETNSID), which is
// how it names that namespace in IFLA_LINK_NETNSID; nullopt when it has given none yet.
Result<std::optional<int32_t>> netns_id_of(int netns_fd);

// Kernels before 6.2 rename only links that are down (the error then says so).
Result<void> rename_link(const std::string& from, const std::string& to);
Result<void> set_link_mac(const std::string& name, const std::string& mac);
Result<void> set_link_mtu(const std::string& name, int mtu);
Result<void> set_link_up(const std::string& name, bool up);
// IFLA_IFALIAS, at most 255 bytes; "" clears it.
Result<void> set_link_alias(const std::string& name, const std::string& alias);
// kNotFound when absent (callers that must be idempotent treat that as done).
Result<void> delete_link(const std::string& name);

// Moves `name` into `target_netns_fd` as `new_name` (one RTM_SETLINK with IFLA_NET_NS_FD
// and IFLA_IFNAME). A `new_name` taken in the target is refused before anything moves:
// the kernel itself would move the link first and fail the rename after, so the target
// is checked beforehand and a clash that slips in between is moved back.
Result<void> move_link(const std::string& name, int target_netns_fd, const std::string& new_name);

// "10.1.2.3/24" or "fd00::3/64"; the prefix length is required.
Result<void> add_address(const std::string& link, const std::string& cidr);
// Every address on the link as CIDR text (IPv6 link-local ones included), IPv4 first.
Result<std::vector<std::string>> list_addresses(const std::string& link);

// A route as CNI spec 1.1.0 describes one (routes[]: dst, gw, mtu, advmss, priority,
// table, scope).
struct RouteSpec {
  std::string dst;                            // CIDR; "0.0.0.0/0" or "::/0" for a default route
  std::optional<std::string> gw;              // none: the destination is on the link
  std::optional<int> table = std::nullopt;    // none: the main table
  std::optional<int> scope = std::nullopt;    // RT_SCOPE_*; none: link without gw, else universe
  std::optional<int> priority = std::nullopt; // the metric
  std::optional<int> mtu = std::nullopt;      // RTAX_MTU
  std::optional<int> advmss = std::nullopt;   // RTAX_ADVMSS
  bool operator==(const RouteSpec&) const = default;
};
// Adds a route through `link`. The link must be up for a route with a gateway (the
// kernel checks the gateway is reachable through it).
Result<void> add_route(const std::string& link, const RouteSpec& route);
// The main table's routes through `link` (dst and gw only), the kernel's own (connected
// subnets) included.
Result<std::vector<RouteSpec>> list_routes(const std::string& link);

} // namespace fabric::cni
