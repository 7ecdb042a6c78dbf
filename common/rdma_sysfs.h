// The RDMA GID table as the kernel publishes it in sysfs
// (/sys/class/infiniband/DEV/ports/P/{gids,gid_attrs/types,gid_attrs/ndevs}/N).
//
// sysfs is readable from any network namespace and names the netdev of every GID, also
// of one that lives in a pod's namespace; verbs gives the same table through a device
// context. Having both lets each check the other.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/rdma_device.h"
#include "common/result.h"
#include "common/sysfs.h"

namespace fabric::rdma {

// RDMA device names present (class/infiniband), sorted.
Result<std::vector<std::string>> list_sysfs_devices(const SysfsReader& sysfs);

// The port numbers of `device` (class/infiniband/DEV/ports/N), ascending. Ports are
// numbered from 1, and a device may have several (dual-port HCAs, some RoCE NICs): never
// assume port 1.
Result<std::vector<uint32_t>> list_sysfs_ports(const SysfsReader& sysfs, const std::string& device);

// The valid GID entries of one port, by index. Unused slots (all-zero GID, or a type
// file the kernel refuses to read) are left out.
Result<std::vector<GidEntry>> read_sysfs_gid_table(const SysfsReader& sysfs,
                                                   const std::string& device, uint32_t port);

// A port's own netdev: the netdev of its GID index 0 (the default GID belongs to the
// port's netdev, never to a macvlan on it). nullopt when unreadable or empty.
std::optional<std::string> sysfs_port_netdev(const SysfsReader& sysfs, const std::string& device,
                                             uint32_t port);

// The port of `device` whose own netdev is `netdev`, or nullopt.
std::optional<uint32_t> sysfs_port_of_netdev(const SysfsReader& sysfs, const std::string& device,
                                             const std::string& netdev);

// "RoCE v2" -> kRoceV2, "IB/RoCE v1" -> kRoceV1 (the kernel's own words).
GidType parse_sysfs_gid_type(const std::string& text);

} // namespace fabric::rdma
