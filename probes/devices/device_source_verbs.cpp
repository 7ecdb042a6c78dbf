// DeviceSource over libibverbs (common/verbs_handles.h): the device, its ports, their GIDs.
#include <cinttypes>
#include <cstdio>
#include <endian.h>
#include <net/if.h>

#include <infiniband/verbs.h>

#include "common/verbs_handles.h"
#include "probes/devices/device_source.h"

namespace fabric::probes {
using namespace fabric::rdma;
namespace {

std::string format_guid(__be64 guid_be) {
  uint64_t guid = be64toh(guid_be);
  char text[20];
  std::snprintf(text, sizeof text, "%04" PRIx64 ":%04" PRIx64 ":%04" PRIx64 ":%04" PRIx64,
                (guid >> 48) & 0xffff, (guid >> 32) & 0xffff, (guid >> 16) & 0xffff, guid & 0xffff);
  return text;
}

std::string transport_name(ibv_transport_type t) {
  switch (t) {
  case IBV_TRANSPORT_IB: return "InfiniBand";
  case IBV_TRANSPORT_IWARP: return "iWARP";
  case IBV_TRANSPORT_USNIC: return "usNIC";
  case IBV_TRANSPORT_USNIC_UDP: return "usNIC UDP";
  case IBV_TRANSPORT_UNSPECIFIED: return "unspecified";
  default: return "unknown";
  }
}

GidType gid_type_of(uint32_t t) {
  switch (t) {
  case IBV_GID_TYPE_IB: return GidType::kIb;
  case IBV_GID_TYPE_ROCE_V1: return GidType::kRoceV1;
  case IBV_GID_TYPE_ROCE_V2: return GidType::kRoceV2;
  default: return GidType::kUnknown;
  }
}

class VerbsDeviceSource final : public DeviceSource {
public:
  explicit VerbsDeviceSource(SysfsReader sysfs) : sysfs_(std::move(sysfs)) {}

  Result<std::vector<DeviceInfo>> list_devices() override {
    FABRIC_ASSIGN_OR_RETURN(auto list, verbs::DeviceList::get());
    std::vector<DeviceInfo> devices;
    for (std::size_t i = 0; i < list.size(); ++i) {
      FABRIC_ASSIGN_OR_RETURN(
          DeviceInfo info,
          describe(list[i]).context(std::string("RDMA device ") + ibv_get_device_name(list[i])));
      devices.push_back(std::move(info));
    }
    return devices;
  }

private:
  Result<DeviceInfo> describe(ibv_device* device) {
    DeviceInfo info;
    info.name = ibv_get_device_name(device);
    info.node_type = ibv_node_type_str(device->node_type);
    info.transport = transport_name(device->transport_type);
    FABRIC_ASSIGN_OR_RETURN(verbs::Context ctx, verbs::open_device(device));
    FABRIC_ASSIGN_OR_RETURN(ibv_device_attr attr, verbs::query_device(ctx.get()));
    info.node_guid = format_guid(attr.node_guid);
    info.fw_version = attr.fw_ver;

    uint64_t gid_capacity = 0;
    for (uint32_t p = 1; p <= attr.phys_port_cnt; ++p) {
      FABRIC_ASSIGN_OR_RETURN(ibv_port_attr port,
                              verbs::query_port(ctx.get(), static_cast<uint8_t>(p)));
      PortInfo pi;
      pi.number = p;
      pi.state = port_state_name(port.state);
      pi.phys_state = phys_state_name(port.phys_state);
      pi.link_layer = port.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
      pi.active_mtu = mtu_enum_to_bytes(port.active_mtu);
      pi.max_mtu = mtu_enum_to_bytes(port.max_mtu);
      pi.width = width_name(port.active_width);
      pi.speed_name = speed_name(port.active_speed);
      if (auto lane = lane_speed_gbps(port.active_speed); lane && width_lanes(port.active_width)) {
        pi.speed_gbps = *lane * width_lanes(port.active_width);
      }
      gid_capacity += static_cast<uint64_t>(port.gid_tbl_len);
      info.ports.push_back(std::move(pi));
    }
    FABRIC_TRY(read_gids(ctx.get(), info, gid_capacity));
    return info;
  }

  // The GID table holds only the valid entries of every port, with their type and netdev:
  // the table RoCE traffic uses.
  Result<void> read_gids(ibv_context* ctx, DeviceInfo& info, uint64_t capacity) {
    FABRIC_ASSIGN_OR_RETURN(auto entries, verbs::query_gid_table(ctx, capacity));
    for (const ibv_gid_entry& e : entries) {
      if (e.port_num < 1 || e.port_num > info.ports.size()) continue;
      GidEntry g;
      g.index = e.gid_index;
      g.gid = gid_to_string(e.gid.raw);
      g.type = gid_type_of(e.gid_type);
      g.ipv4 = ipv4_of_gid(e.gid.raw);
      g.netdev = netdev_name(info.name, e);
      info.ports[e.port_num - 1].gids.push_back(std::move(g));
    }
    return Ok();
  }

  // if_indextoname resolves only netdevs of our own namespace; a GID of a pod's macvlan
  // has its ifindex in the pod's namespace. sysfs names it from any namespace.
  std::string netdev_name(const std::string& device, const ibv_gid_entry& e) {
    std::string rel = "class/infiniband/" + device + "/ports/" + std::to_string(e.port_num) +
                      "/gid_attrs/ndevs/" + std::to_string(e.gid_index);
    if (auto name = sysfs_.read_optional(rel); name.ok() && name->has_value()) {
      return **name;
    }
    char buf[IF_NAMESIZE] = {};
    if (e.ndev_ifindex != 0 && if_indextoname(e.ndev_ifindex, buf) != nullptr) return buf;
    return "";
  }

  SysfsReader sysfs_;
};

} // namespace

std::unique_ptr<DeviceSource> make_verbs_device_source(SysfsReader sysfs) {
  return std::make_unique<VerbsDeviceSource>(std::move(sysfs));
}

} // namespace fabric::probes
