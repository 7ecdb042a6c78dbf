#include <gtest/gtest.h>

#include "common/json.h"
#include "probes/devices/device_report.h"
#include "probes/devices/device_source.h"

namespace fabric::probes {
namespace {

using rdma::GidEntry;
using rdma::GidType;
using rdma::PortInfo;

DeviceInfo rxe0() {
  DeviceInfo d;
  d.name = "rxe0";
  d.node_type = "RNIC";
  d.transport = "InfiniBand";
  d.node_guid = "5054:00ff:fe12:3456";
  PortInfo p;
  p.number = 1;
  p.state = "ACTIVE";
  p.phys_state = "LINK_UP";
  p.link_layer = "Ethernet";
  p.active_mtu = 1024;
  p.max_mtu = 4096;
  p.speed_gbps = 10.0;
  p.width = "1X";
  p.speed_name = "QDR";
  p.gids.push_back(GidEntry{0, "fe80::5054:ff:fe12:3456", GidType::kRoceV1, "eth0", {}});
  p.gids.push_back(GidEntry{1, "::ffff:10.77.0.11", GidType::kRoceV2, "eth0", "10.77.0.11"});
  d.ports.push_back(p);
  return d;
}

TEST(DeviceReport, JsonCarriesEveryFieldWithSchemaVersion) {
  auto doc = json::parse(render_devices_json({rxe0()}), "report");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ((*doc)["schema_version"].GetInt(), json::kSchemaVersion);
  const auto& dev = (*doc)["devices"][0];
  EXPECT_STREQ(dev["name"].GetString(), "rxe0");
  EXPECT_STREQ(dev["node_guid"].GetString(), "5054:00ff:fe12:3456");
  const auto& port = dev["ports"][0];
  EXPECT_EQ(port["port"].GetInt(), 1);
  EXPECT_STREQ(port["state"].GetString(), "ACTIVE");
  EXPECT_STREQ(port["link_layer"].GetString(), "Ethernet");
  EXPECT_EQ(port["active_mtu"].GetInt(), 1024);
  EXPECT_DOUBLE_EQ(port["speed_gbps"].GetDouble(), 10.0);
  const auto& gid = port["gids"][1];
  EXPECT_EQ(gid["index"].GetInt(), 1);
  EXPECT_STREQ(gid["type"].GetString(), "RoCE v2");
  EXPECT_STREQ(gid["netdev"].GetString(), "eth0");
  EXPECT_STREQ(gid["ipv4"].GetString(), "10.77.0.11");
  EXPECT_TRUE(port["gids"][0]["ipv4"].IsNull());
}

TEST(DeviceReport, TextShowsPortLineAndGidTable) {
  std::string text = render_devices_text({rxe0()});
  EXPECT_NE(text.find("rxe0: RNIC"), std::string::npos) << text;
  EXPECT_NE(text.find("port 1: ACTIVE (LINK_UP), Ethernet, MTU 1024 (max 4096), 10 Gb/s (1X QDR)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    1     ::ffff:10.77.0.11        RoCE v2  eth0    10.77.0.11\n"),
            std::string::npos)
      << text;
}

TEST(DeviceReport, NoDeviceIsSaidPlainly) {
  EXPECT_EQ(render_devices_text({}), std::string(kNoRdmaDevice) + "\n");
  auto doc = json::parse(render_devices_json({}), "report");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["devices"].Size(), 0u);
  EXPECT_STREQ((*doc)["message"].GetString(), kNoRdmaDevice);
}

TEST(DeviceSelect, UnknownNameListsWhatExists) {
  auto chosen = select_devices({rxe0()}, {"mlx5_0"});
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(chosen.error().message(), "--device mlx5_0: no such RDMA device (have: rxe0)");
  EXPECT_EQ(select_devices({rxe0()}, {"rxe0"})->size(), 1u);
  EXPECT_EQ(select_devices({rxe0()}, {})->size(), 1u);
}

} // namespace
} // namespace fabric::probes
