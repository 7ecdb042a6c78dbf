// The RDMA subsystem's own netlink interface (NETLINK_RDMA, client RDMA_NL_NLDEV: what
// `rdma dev` and `rdma system` speak): the devices the calling thread's network namespace
// sees, the subsystem's namespace mode, and moving a device into another namespace.
//
// Everything acts in the calling thread's network namespace: in exclusive mode a
// namespace sees only the RDMA devices that were moved into it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace fabric::rdma {

// shared: every RDMA device is visible in every network namespace (the kernel default).
// exclusive: a device belongs to one namespace and must be moved there.
enum class NetnsMode { kShared, kExclusive };

std::string_view netns_mode_name(NetnsMode mode); // "shared", "exclusive" (as `rdma system`)

// RDMA_NLDEV_CMD_SYS_GET.
Result<NetnsMode> get_netns_mode();
// RDMA_NLDEV_CMD_SYS_SET. The kernel changes the mode only while no network namespace
// other than the initial one exists; otherwise this fails with kTryAgain.
Result<void> set_netns_mode(NetnsMode mode);

// RDMA_NLDEV_CMD_GET dump: the kernel's index of device `name`; kNotFound when the
// current namespace does not see it.
Result<uint32_t> device_index(const std::string& name);
// The devices the current namespace sees, in the kernel's order (by index).
Result<std::vector<std::string>> list_devices();

// RDMA_NLDEV_CMD_SET with RDMA_NLDEV_NET_NS_FD: moves device `name` into the network
// namespace `netns_fd`. Needs exclusive mode and a driver that supports it; a refusal
// says which of the two is missing.
Result<void> move_device_to_netns(const std::string& name, int netns_fd);

} // namespace fabric::rdma
