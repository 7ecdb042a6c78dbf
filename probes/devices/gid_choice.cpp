#include "probes/devices/gid_choice.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/fd.h"
#include "common/rdma_sysfs.h"
#include "common/strings.h"

namespace fabric::probes {
using rdma::GidEntry;
using rdma::GidType;
namespace {

// Any port will do: a UDP connect() only consults the routing table. The discard port
// keeps a stray datagram (there is none) harmless.
constexpr uint16_t kRouteProbePort = 9;

struct PortTable {
  std::string device;
  uint32_t port = 0;
  std::vector<GidEntry> gids;
};

struct Match {
  const PortTable* table;
  const GidEntry* entry;
};

bool parse_u32(const std::string& text, uint32_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string where(const PortTable& table, const GidEntry& entry) {
  return table.device + " port " + std::to_string(table.port) + " index " +
         std::to_string(entry.index);
}

std::string entry_text(const GidEntry& entry) {
  return "index " + std::to_string(entry.index) + " " + entry.gid + " " +
         std::string(rdma::gid_type_name(entry.type));
}

// The GID tables of every port of `only` (or of every device).
Result<std::vector<PortTable>> read_tables(const SysfsReader& sysfs,
                                           const std::optional<std::string>& only,
                                           std::vector<std::string>& devices_out) {
  FABRIC_ASSIGN_OR_RETURN(auto devices, rdma::list_sysfs_devices(sysfs));
  devices_out = devices;
  if (only) {
    if (std::find(devices.begin(), devices.end(), *only) == devices.end()) {
      return Error(ErrorCode::kNotFound, "RDMA device " + *only,
                   devices.empty() ? "no RDMA device on this host"
                                   : "no such RDMA device (have: " + join(devices) + ")");
    }
    devices = {*only};
  }
  std::vector<PortTable> tables;
  for (const auto& device : devices) {
    FABRIC_ASSIGN_OR_RETURN(auto ports, sysfs.list("class/infiniband/" + device + "/ports"));
    std::vector<uint32_t> numbers;
    for (const auto& name : ports) {
      uint32_t port = 0;
      if (parse_u32(name, port)) numbers.push_back(port);
    }
    std::sort(numbers.begin(), numbers.end());
    for (uint32_t port : numbers) {
      auto gids = rdma::read_sysfs_gid_table(sysfs, device, port);
      if (!gids.ok()) return std::move(gids).error().with_context("choosing a GID");
      tables.push_back(PortTable{device, port, std::move(*gids)});
    }
  }
  return tables;
}

GidChoice make_choice(const PortTable& table, const GidEntry& entry, std::string reason) {
  GidChoice choice;
  choice.rdma_device = table.device;
  choice.port = table.port;
  choice.gid_index = entry.index;
  choice.gid = entry.gid;
  choice.netdev = entry.netdev;
  choice.type = entry.type;
  choice.ipv4 = entry.ipv4.value_or("");
  choice.reason = std::move(reason);
  return choice;
}

bool is_ipv4(const std::string& text) {
  in_addr addr{};
  return inet_pton(AF_INET, text.c_str(), &addr) == 1;
}

// The IPv4 a GID text maps to, or "" when it is not IPv4-mapped (or not a GID at all).
std::string mapped_ipv4(const std::string& gid) {
  uint8_t raw[16];
  if (!rdma::parse_gid(gid, raw)) return "";
  return rdma::ipv4_of_gid(raw).value_or("");
}

} // namespace

Result<LocalRoute> local_route_to(const std::string& peer_ipv4) {
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(kRouteProbePort);
  if (inet_pton(AF_INET, peer_ipv4.c_str(), &peer.sin_addr) != 1) {
    return Error(ErrorCode::kInvalidArgument, "peer address '" + peer_ipv4 + "'",
                 "not an IPv4 address");
  }
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock) return Error::from_errno(errno, "socket(AF_INET, SOCK_DGRAM)");
  if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&peer), sizeof peer) != 0) {
    return Error::from_errno(errno, "finding the route to " + peer_ipv4)
        .with_hint("check `ip route get " + peer_ipv4 + "`: this host has no route to the peer");
  }
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (::getsockname(sock.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    return Error::from_errno(errno, "getsockname");
  }
  char text[INET_ADDRSTRLEN];
  if (inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) == nullptr) {
    return Error::from_errno(errno, "inet_ntop");
  }
  LocalRoute route;
  route.local_ipv4 = text;

  ifaddrs* addrs = nullptr;
  if (::getifaddrs(&addrs) != 0) return Error::from_errno(errno, "getifaddrs");
  for (ifaddrs* ifa = addrs; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
    in_addr addr{};
    std::memcpy(&addr, &reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr)->sin_addr, sizeof addr);
    if (addr.s_addr != local.sin_addr.s_addr) continue;
    // getifaddrs reports an address's label, which for `ip addr add ... label eth0:1` is
    // "eth0:1"; the kernel requires labels to start with the device name and a colon.
    std::string name = ifa->ifa_name;
    route.netdev = name.substr(0, name.find(':'));
    break;
  }
  ::freeifaddrs(addrs);
  if (route.netdev.empty()) {
    return Error(ErrorCode::kNotFound, "finding the netdev of " + route.local_ipv4,
                 "the kernel reaches " + peer_ipv4 + " from " + route.local_ipv4 +
                     ", but no netdev in this network namespace owns that address");
  }
  return route;
}

Result<GidChoice> choose_gid(const SysfsReader& sysfs, const std::string& ipv4,
                             const std::string& netdev, std::optional<std::string> rdma_device) {
  if (!is_ipv4(ipv4)) {
    return Error(ErrorCode::kInvalidArgument, "choosing a GID",
                 "'" + ipv4 + "' is not an IPv4 address");
  }
  std::vector<std::string> devices;
  FABRIC_ASSIGN_OR_RETURN(auto tables, read_tables(sysfs, rdma_device, devices));
  const std::string what = "choosing a GID for " + ipv4 + " on " + netdev;
  if (tables.empty()) {
    return Error(ErrorCode::kNotFound, what,
                 devices.empty() ? "no RDMA device on this host"
                 : rdma_device   ? *rdma_device + " has no ports"
                                 : "no RDMA device has ports")
        .with_hint("is an RDMA driver (mlx5_ib, rdma_rxe) loaded? Without RDMA, test over TCP");
  }

  std::vector<Match> v2, v1, other_netdev, on_netdev;
  for (const auto& table : tables) {
    for (const auto& entry : table.gids) {
      const bool same_ip = entry.ipv4 == ipv4;
      const bool same_netdev = entry.netdev == netdev;
      if (same_netdev) on_netdev.push_back({&table, &entry});
      if (same_ip && same_netdev && entry.type == GidType::kRoceV2) v2.push_back({&table, &entry});
      if (same_ip && same_netdev && entry.type == GidType::kRoceV1) v1.push_back({&table, &entry});
      if (same_ip && !same_netdev) other_netdev.push_back({&table, &entry});
    }
  }

  if (!v2.empty()) {
    // One port has one RoCE v2 entry per address and netdev; two ports (or two devices,
    // say rxe and mlx5 on one netdev) matching means the device must be named.
    const Match& first = v2.front();
    for (const auto& m : v2) {
      if (m.table != first.table) {
        return Error(ErrorCode::kInvalidArgument, what,
                     "both " + where(*first.table, *first.entry) + " and " +
                         where(*m.table, *m.entry) + " have a RoCE v2 GID for it")
            .with_hint("name the RDMA device to use (--device)");
      }
    }
    return make_choice(*first.table, *first.entry,
                       "RoCE v2 GID of " + ipv4 + " on " + netdev +
                           ", the netdev that owns the address used to reach the peer");
  }
  if (!v1.empty()) {
    const Match& m = v1.front();
    return Error(ErrorCode::kUnsupported, what,
                 "only a RoCE v1 GID exists for it (" + where(*m.table, *m.entry) + ")")
        .with_hint("enable RoCE v2 on the NIC, or pass --gid-index " +
                   std::to_string(m.entry->index) +
                   " on both sides to test over RoCE v1 (both sides must use the same version)");
  }
  if (!other_netdev.empty()) {
    std::vector<std::string> found;
    for (const auto& m : other_netdev)
      found.push_back(where(*m.table, *m.entry) + " on " +
                      (m.entry->netdev.empty() ? "no netdev" : m.entry->netdev));
    return Error(ErrorCode::kNotFound, what,
                 "the GID of " + ipv4 + " belongs to another netdev: " + join(found))
        .with_hint("the address seems to be on two netdevs, or moved; check `ip -4 addr` "
                   "and pass --gid-index to pick one explicitly");
  }
  if (!on_netdev.empty()) {
    std::vector<std::string> found;
    const PortTable* port = on_netdev.front().table;
    for (const auto& m : on_netdev)
      found.push_back(entry_text(*m.entry));
    return Error(ErrorCode::kNotFound, what,
                 "no GID for that address; " + port->device + " port " +
                     std::to_string(port->port) + " has for " + netdev + ": " + join(found))
        .with_hint("the kernel adds a GID when the address is added to " + netdev +
                   "; check the address is on that netdev (`ip -4 addr show " + netdev + "`)");
  }
  if (rdma_device) {
    return Error(ErrorCode::kNotFound, what,
                 *rdma_device + " does not serve " + netdev + " (no GID entry of it names " +
                     netdev + ")")
        .with_hint("leave out the RDMA device to let the probe find the one serving " + netdev);
  }
  return Error(ErrorCode::kNotFound, what,
               "no RDMA device serves " + netdev +
                   " (no GID entry names it; devices: " + join(devices) + ")")
      .with_hint("the peer is reached over a netdev without RoCE: connect to the peer's "
                 "address on the RoCE network, or test over TCP");
}

Result<GidChoice> gid_by_index(const SysfsReader& sysfs, const std::string& rdma_device,
                               uint32_t port, uint32_t index) {
  const std::string what = "--gid-index " + std::to_string(index);
  auto table = rdma::read_sysfs_gid_table(sysfs, rdma_device, port);
  if (!table.ok()) return std::move(table).error().with_context(what);
  for (const auto& entry : *table) {
    if (entry.index == index) {
      return make_choice(PortTable{rdma_device, port, {}}, entry, "chosen with " + what);
    }
  }
  std::vector<std::string> valid;
  for (const auto& entry : *table)
    valid.push_back(std::to_string(entry.index));
  return Error(ErrorCode::kNotFound, what,
               rdma_device + " port " + std::to_string(port) + " has no valid GID at index " +
                   std::to_string(index) +
                   (valid.empty() ? " (its GID table is empty)" : " (valid: " + join(valid) + ")"));
}

Result<std::vector<RdmaPort>> rdma_ports_for_netdev(const SysfsReader& sysfs,
                                                    const std::string& netdev) {
  std::vector<std::string> devices;
  FABRIC_ASSIGN_OR_RETURN(auto tables, read_tables(sysfs, std::nullopt, devices));
  std::vector<RdmaPort> ports;
  for (const auto& table : tables) {
    bool names_it = std::any_of(table.gids.begin(), table.gids.end(),
                                [&](const GidEntry& e) { return e.netdev == netdev; });
    if (names_it) ports.push_back(RdmaPort{table.device, table.port});
  }
  return ports;
}

Result<RdmaPort> rdma_port_for_netdev(const SysfsReader& sysfs, const std::string& netdev) {
  FABRIC_ASSIGN_OR_RETURN(auto ports, rdma_ports_for_netdev(sysfs, netdev));
  const std::string what = "finding the RDMA device of " + netdev;
  if (ports.empty()) {
    return Error(ErrorCode::kNotFound, what, "no RDMA device has a GID on " + netdev)
        .with_hint("is " + netdev + " a RoCE NIC (or a VLAN/macvlan on one) with an address?");
  }
  if (ports.size() > 1) {
    std::vector<std::string> found;
    for (const auto& p : ports)
      found.push_back(p.device + " port " + std::to_string(p.port));
    return Error(ErrorCode::kInvalidArgument, what, "several serve it: " + join(found))
        .with_hint("name the RDMA device to use (--device)");
  }
  return ports.front();
}

std::string describe_gid_choice(const GidChoice& c) {
  return std::string(rdma::gid_type_name(c.type)) + " GID index " + std::to_string(c.gid_index) +
         " (" + c.gid + " on " + (c.netdev.empty() ? "no netdev" : c.netdev) + ", " +
         c.rdma_device + " port " + std::to_string(c.port) + ")";
}

Result<void> check_gid_agreement(const GidChoice& local, const GidChoice& remote) {
  const std::string both = "this side picked " + describe_gid_choice(local) + "; peer picked " +
                           describe_gid_choice(remote);
  const char* operation = "GID choices disagree";
  if (local.type != remote.type) {
    const bool remote_is_odd = remote.type != GidType::kRoceV2;
    return Error(ErrorCode::kInvalidConfig, operation, both)
        .with_hint("both sides must use the same RoCE version: use --gid-index on " +
                   std::string(remote_is_odd ? "the peer" : "this side") +
                   " to pick its RoCE v2 GID (or leave --gid-index out on both sides)");
  }
  const std::string local_ip = mapped_ipv4(local.gid);
  const std::string remote_ip = mapped_ipv4(remote.gid);
  if (local_ip.empty() != remote_ip.empty()) {
    return Error(ErrorCode::kInvalidConfig, operation,
                 both + "; one GID is IPv4-mapped and the other is not (different IP families)")
        .with_hint("use --gid-index on both sides to pick GIDs of the same family");
  }
  if (!remote_ip.empty() && !local.peer_ipv4.empty() && remote_ip != local.peer_ipv4) {
    return Error(ErrorCode::kInvalidConfig, operation,
                 both + "; but this side reaches the peer at " + local.peer_ipv4 +
                     ", not at the peer GID's " + remote_ip)
        .with_hint("connect to the peer's address on its RoCE netdev, or use --gid-index on "
                   "the peer to pick the GID of " +
                   local.peer_ipv4);
  }
  if (!local_ip.empty() && !remote.peer_ipv4.empty() && local_ip != remote.peer_ipv4) {
    return Error(ErrorCode::kInvalidConfig, operation,
                 both + "; but the peer reaches this side at " + remote.peer_ipv4 +
                     ", not at this GID's " + local_ip)
        .with_hint("use --gid-index on this side to pick the GID of " + remote.peer_ipv4 +
                   ", or route the test over the RoCE netdev");
  }
  return Ok();
}

void write_gid_choice_json(json::Writer& out, const GidChoice& c) {
  out.begin_object();
  out.field("rdma_device", c.rdma_device);
  out.field("port", c.port);
  out.field("gid_index", c.gid_index);
  out.field("gid", c.gid);
  out.field("netdev", c.netdev);
  out.field("type", rdma::gid_type_name(c.type));
  out.field("ipv4", c.ipv4);
  out.field("peer_ipv4", c.peer_ipv4);
  out.field("reason", c.reason);
  out.end_object();
}

Result<GidChoice> parse_gid_choice(const rapidjson::Value& value, std::string_view path) {
  if (!value.IsObject()) {
    return Error(ErrorCode::kDecode, std::string(path), "must be an object");
  }
  GidChoice c;
  FABRIC_ASSIGN_OR_RETURN(c.rdma_device, json::get_string(value, path, "rdma_device"));
  FABRIC_ASSIGN_OR_RETURN(c.gid, json::get_string(value, path, "gid"));
  FABRIC_ASSIGN_OR_RETURN(c.netdev, json::get_string(value, path, "netdev"));
  FABRIC_ASSIGN_OR_RETURN(auto type, json::get_string(value, path, "type"));
  c.type = rdma::parse_sysfs_gid_type(type);
  FABRIC_ASSIGN_OR_RETURN(auto ipv4, json::get_optional_string(value, path, "ipv4"));
  c.ipv4 = ipv4.value_or("");
  FABRIC_ASSIGN_OR_RETURN(auto peer, json::get_optional_string(value, path, "peer_ipv4"));
  c.peer_ipv4 = peer.value_or("");
  FABRIC_ASSIGN_OR_RETURN(auto reason, json::get_optional_string(value, path, "reason"));
  c.reason = reason.value_or("");
  for (auto [name, target] : {std::pair<const char*, uint32_t*>{"port", &c.port},
                              std::pair<const char*, uint32_t*>{"gid_index", &c.gid_index}}) {
    FABRIC_ASSIGN_OR_RETURN(auto number, json::get_optional_int(value, path, name));
    if (!number || *number < 0 || *number > UINT32_MAX) {
      return Error(ErrorCode::kDecode, json::field_path(path, name),
                   "must be an unsigned 32-bit integer");
    }
    *target = static_cast<uint32_t>(*number);
  }
  uint8_t raw[16];
  if (!rdma::parse_gid(c.gid, raw)) {
    return Error(ErrorCode::kDecode, json::field_path(path, "gid"),
                 "'" + c.gid + "' is not a GID (IPv6 address)");
  }
  if (c.type == GidType::kUnknown) {
    return Error(ErrorCode::kDecode, json::field_path(path, "type"),
                 "'" + type + "' is not a GID type (RoCE v2, IB/RoCE v1, IB)");
  }
  return c;
}

} // namespace fabric::probes
