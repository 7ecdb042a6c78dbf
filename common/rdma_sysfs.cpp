#include "common/rdma_sysfs.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace fabric::rdma {

Result<std::vector<std::string>> list_sysfs_devices(const SysfsReader& sysfs) {
  return sysfs.list("class/infiniband");
}

Result<std::vector<uint32_t>> list_sysfs_ports(const SysfsReader& sysfs,
                                               const std::string& device) {
  FABRIC_ASSIGN_OR_RETURN(auto names, sysfs.list("class/infiniband/" + device + "/ports"));
  std::vector<uint32_t> numbers;
  for (const auto& name : names) {
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    if (ec == std::errc() && end == name.data() + name.size()) numbers.push_back(n);
  }
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

std::optional<std::string> sysfs_port_netdev(const SysfsReader& sysfs, const std::string& device,
                                             uint32_t port) {
  auto ndev = sysfs.read_optional("class/infiniband/" + device + "/ports/" + std::to_string(port) +
                                  "/gid_attrs/ndevs/0");
  if (!ndev.ok() || !*ndev || (*ndev)->empty()) return std::nullopt;
  return **ndev;
}

std::optional<uint32_t> sysfs_port_of_netdev(const SysfsReader& sysfs, const std::string& device,
                                             const std::string& netdev) {
  auto ports = list_sysfs_ports(sysfs, device);
  if (!ports.ok()) return std::nullopt;
  for (uint32_t p : *ports) {
    if (sysfs_port_netdev(sysfs, device, p) == netdev) return p;
  }
  return std::nullopt;
}

GidType parse_sysfs_gid_type(const std::string& text) {
  if (text == "RoCE v2") return GidType::kRoceV2;
  // The kernel writes "IB/RoCE v1" for both; which one it is depends on the link layer.
  if (text == "IB/RoCE v1" || text == "RoCE v1") return GidType::kRoceV1;
  if (text == "IB") return GidType::kIb;
  return GidType::kUnknown;
}

Result<std::vector<GidEntry>> read_sysfs_gid_table(const SysfsReader& sysfs,
                                                   const std::string& device, uint32_t port) {
  const std::string port_dir =
      "class/infiniband/" + device + "/ports/" + std::to_string(port) + "/";
  if (!sysfs.exists(port_dir)) {
    return Error(ErrorCode::kNotFound, "RDMA port " + device + "/" + std::to_string(port),
                 "not in " + sysfs.path("class/infiniband"));
  }
  FABRIC_ASSIGN_OR_RETURN(auto names, sysfs.list(port_dir + "gids"));
  auto link_layer = sysfs.read_optional(port_dir + "link_layer");
  const bool ethernet = link_layer.ok() && *link_layer && **link_layer == "Ethernet";

  std::vector<GidEntry> table;
  for (const auto& name : names) {
    uint32_t index = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), index);
    if (ec != std::errc() || end != name.data() + name.size()) continue;
    auto gid_text = sysfs.read(port_dir + "gids/" + name);
    if (!gid_text.ok()) continue;
    uint8_t raw[16];
    static constexpr uint8_t kZero[16] = {};
    if (!parse_gid(*gid_text, raw) || std::memcmp(raw, kZero, sizeof raw) == 0) continue;
    // An unused slot's type file fails to read (EINVAL); a valid one always has a type.
    auto type = sysfs.read(port_dir + "gid_attrs/types/" + name);
    if (!type.ok()) continue;
    GidEntry entry;
    entry.index = index;
    entry.gid = gid_to_string(raw);
    entry.type = parse_sysfs_gid_type(*type);
    if (entry.type == GidType::kRoceV1 && !ethernet) entry.type = GidType::kIb;
    auto ndev = sysfs.read_optional(port_dir + "gid_attrs/ndevs/" + name);
    if (ndev.ok() && *ndev) entry.netdev = **ndev;
    entry.ipv4 = ipv4_of_gid(raw);
    table.push_back(std::move(entry));
  }
  std::sort(table.begin(), table.end(),
            [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  return table;
}

} // namespace fabric::rdma
