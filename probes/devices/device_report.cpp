#include "probes/devices/device_report.h"

#include <algorithm>
#include <cstdio>

#include "common/json.h"

namespace fabric::probes {
using namespace fabric::rdma;
namespace {

std::string format_speed(const PortInfo& port) {
  if (!port.speed_gbps) return "speed unknown";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g Gb/s", *port.speed_gbps);
  std::string text = buf;
  if (!port.width.empty() || !port.speed_name.empty()) {
    text += " (" + port.width + (port.width.empty() || port.speed_name.empty() ? "" : " ") +
            port.speed_name + ")";
  }
  return text;
}

void append_gid_table(std::string& out, const std::vector<GidEntry>& gids) {
  if (gids.empty()) {
    out += "    no valid GID entries\n";
    return;
  }
  std::size_t gid_width = 3, netdev_width = 6;
  for (const auto& g : gids) {
    gid_width = std::max(gid_width, g.gid.size());
    netdev_width = std::max(netdev_width, g.netdev.size());
  }
  char line[256];
  std::snprintf(line, sizeof line, "    %-5s %-*s  %-7s  %-*s  %s\n", "INDEX",
                static_cast<int>(gid_width), "GID", "TYPE", static_cast<int>(netdev_width),
                "NETDEV", "IPV4");
  out += line;
  for (const auto& g : gids) {
    std::snprintf(line, sizeof line, "    %-5u %-*s  %-7s  %-*s  %s\n", g.index,
                  static_cast<int>(gid_width), g.gid.c_str(),
                  std::string(gid_type_name(g.type)).c_str(), static_cast<int>(netdev_width),
                  g.netdev.empty() ? "-" : g.netdev.c_str(), g.ipv4 ? g.ipv4->c_str() : "-");
    out += line;
  }
}

} // namespace

std::string render_devices_text(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return std::string(kNoRdmaDevice) + "\n";
  std::string out;
  for (const auto& d : devices) {
    out += d.name + ": " + d.node_type + ", " + d.transport + ", node GUID " + d.node_guid +
           ", firmware " + (d.fw_version.empty() ? "-" : d.fw_version) + "\n";
    for (const auto& p : d.ports) {
      out += "  port " + std::to_string(p.number) + ": " + p.state + " (" + p.phys_state + "), " +
             p.link_layer + ", MTU " + std::to_string(p.active_mtu) + " (max " +
             std::to_string(p.max_mtu) + "), " + format_speed(p) + "\n";
      append_gid_table(out, p.gids);
    }
  }
  return out;
}

std::string render_devices_json(const std::vector<DeviceInfo>& devices) {
  json::Writer w;
  w.begin_object().field("schema_version", json::kSchemaVersion);
  if (devices.empty()) w.field("message", kNoRdmaDevice);
  w.key("devices").begin_array();
  for (const auto& d : devices) {
    w.begin_object()
        .field("name", d.name)
        .field("node_type", d.node_type)
        .field("transport", d.transport)
        .field("node_guid", d.node_guid)
        .field("fw_version", d.fw_version);
    w.key("ports").begin_array();
    for (const auto& p : d.ports) {
      w.begin_object()
          .field("port", p.number)
          .field("state", p.state)
          .field("phys_state", p.phys_state)
          .field("link_layer", p.link_layer)
          .field("active_mtu", p.active_mtu)
          .field("max_mtu", p.max_mtu)
          .field("speed_gbps", p.speed_gbps)
          .field("width", p.width)
          .field("speed", p.speed_name);
      w.key("gids").begin_array();
      for (const auto& g : p.gids) {
        w.begin_object()
            .field("index", g.index)
            .field("gid", g.gid)
            .field("type", gid_type_name(g.type))
            .field("netdev", g.netdev)
            .field("ipv4", g.ipv4)
            .end_object();
      }
      w.end_array().end_object();
    }
    w.end_array().end_object();
  }
  w.end_array().end_object();
  return w.str();
}

} // namespace fabric::probes
