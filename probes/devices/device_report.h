// Renders the device list for people (text) and for programs (--json).
#pragma once

#include <string>
#include <vector>

#include "common/rdma_device.h"

namespace fabric::probes {
using rdma::DeviceInfo;

// The line printed when the host has no RDMA device (also the JSON's "message").
inline constexpr const char* kNoRdmaDevice =
    "no RDMA device found (no /sys/class/infiniband entries: is an RDMA driver such as "
    "mlx5_ib or rdma_rxe loaded?)";

std::string render_devices_text(const std::vector<DeviceInfo>& devices);

// {"schema_version": 1, "devices": [{"name", "node_type", "transport", "node_guid",
//  "fw_version", "ports": [{"port", "state", "phys_state", "link_layer", "active_mtu",
//  "max_mtu", "speed_gbps", "width", "speed", "gids": [{"index", "gid", "type", "netdev",
//  "ipv4"}]}]}]}
std::string render_devices_json(const std::vector<DeviceInfo>& devices);

} // namespace fabric::probes
