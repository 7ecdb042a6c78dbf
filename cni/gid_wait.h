// Waiting for the pod's RoCE v2 GID: the proof that RDMA traffic from the pod's address
// will carry the right source GID.
//
// The kernel fills the GID table from a workqueue after an address appears on a netdev
// whose lower device has an RDMA port (roce_gid_mgmt), so the entry shows up some time
// after the address was added. This polls the sysfs table with a short backoff until a
// deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/sysfs.h"

namespace fabric::cni {

// Waits until port `port` of `rdma_device` has a RoCE v2 GID ::ffff:<ipv4> whose netdev
// is `netdev`, and returns its index. On timeout (kTimeout) the error says what the table
// held instead: the GID on another netdev, only as RoCE v1, or not at all. A missing
// device or port fails at once (kNotFound); a malformed `ipv4` is kInvalidArgument. Only
// IPv4 addresses have RoCE v2 GIDs of this form; IPv6 pod addresses are not checked.
Result<uint32_t> wait_for_roce_v2_gid(const SysfsReader& sysfs, const std::string& rdma_device,
                                      uint32_t port, const std::string& ipv4,
                                      const std::string& netdev, std::chrono::milliseconds timeout);

} // namespace fabric::cni
