// fabric-probe devices on a real rdma_rxe device, inside the soft-RoCE lab VM
// (scripts/lab.sh sets FABRIC_LAB_*). Checks the verbs view against sysfs and against
// rdma-core's own ibv_devinfo.
#include <cstdlib>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/rdma_sysfs.h"
#include "common/subprocess.h"
#include "common/verbs_handles.h"
#include "probes/devices/device_source.h"

namespace fabric {
namespace {

struct Lab {
  std::string rdma_dev;
  std::string addr;
  std::string netdev;
};

std::optional<Lab> lab_env() {
  const char* dev = std::getenv("FABRIC_LAB_RDMA_DEV");
  const char* addr = std::getenv("FABRIC_LAB_ADDR");
  const char* netdev = std::getenv("FABRIC_LAB_NETDEV");
  if (dev == nullptr || addr == nullptr || netdev == nullptr) return std::nullopt;
  return Lab{dev, addr, netdev};
}

class DevicesVm : public ::testing::Test {
protected:
  void SetUp() override {
    auto env = lab_env();
    if (!env) GTEST_SKIP() << "not inside the soft-RoCE lab (run through scripts/lab.sh)";
    lab_ = *env;
    auto devices = probes::make_verbs_device_source()->list_devices();
    ASSERT_TRUE(devices.ok()) << devices.error().message();
    for (auto& d : *devices) {
      if (d.name == lab_.rdma_dev) device_ = d;
    }
    ASSERT_FALSE(device_.name.empty()) << lab_.rdma_dev << " not listed by verbs";
    ASSERT_EQ(device_.ports.size(), 1u);
  }

  Lab lab_;
  rdma::DeviceInfo device_;
};

TEST_F(DevicesVm, PortMatchesSysfs) {
  SysfsReader sysfs;
  const std::string port = "class/infiniband/" + lab_.rdma_dev + "/ports/1/";
  const auto& p = device_.ports[0];
  // sysfs says "4: ACTIVE"; the number and word must both agree.
  EXPECT_EQ(*sysfs.read(port + "state"), "4: " + p.state);
  EXPECT_EQ(*sysfs.read(port + "link_layer"), p.link_layer);
  EXPECT_EQ(p.link_layer, "Ethernet");
  // sysfs rate: "10 Gb/sec (1X QDR)".
  std::string rate = *sysfs.read(port + "rate");
  ASSERT_TRUE(p.speed_gbps.has_value());
  std::ostringstream expected;
  expected << *p.speed_gbps << " Gb/sec (" << p.width << " " << p.speed_name << ")";
  EXPECT_EQ(rate, expected.str());
}

TEST_F(DevicesVm, GidTableMatchesSysfsEntryByEntry) {
  auto table = rdma::read_sysfs_gid_table(SysfsReader(), lab_.rdma_dev, 1);
  ASSERT_TRUE(table.ok()) << table.error().message();
  const auto& gids = device_.ports[0].gids;
  ASSERT_EQ(gids.size(), table->size());
  ASSERT_FALSE(gids.empty());
  for (std::size_t i = 0; i < gids.size(); ++i) {
    EXPECT_EQ(gids[i].index, (*table)[i].index);
    EXPECT_EQ(gids[i].gid, (*table)[i].gid);
    EXPECT_EQ(gids[i].type, (*table)[i].type) << gids[i].gid;
    EXPECT_EQ(gids[i].netdev, (*table)[i].netdev);
    EXPECT_EQ(gids[i].ipv4, (*table)[i].ipv4);
  }
}

TEST_F(DevicesVm, RoceV2GidCarriesTheVmsAddress) {
  bool found = false;
  for (const auto& g : device_.ports[0].gids) {
    if (g.type == rdma::GidType::kRoceV2 && g.ipv4 == lab_.addr) {
      found = true;
      EXPECT_EQ(g.netdev, lab_.netdev);
      EXPECT_EQ(g.gid, "::ffff:" + lab_.addr);
    }
  }
  EXPECT_TRUE(found) << "no RoCE v2 GID for " << lab_.addr;
}

// ibv_devinfo -v prints, per port: "state: PORT_ACTIVE (4)", "active_mtu: 1024 (3)",
// "link_layer: Ethernet" and "GID[  1]: ::ffff:10.77.0.11, RoCE v2".
TEST_F(DevicesVm, AgreesWithIbvDevinfo) {
  auto r = run_subprocess({"ibv_devinfo", "-v", "-d", lab_.rdma_dev});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->exit_status, 0) << r->stderr_text;
  const std::string& out = r->stdout_text;
  const auto& p = device_.ports[0];
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(state:\s+PORT_(\w+) \(\d+\))")));
  EXPECT_EQ(m[1].str(), p.state);
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(active_mtu:\s+(\d+) \(\d+\))")));
  EXPECT_EQ(std::stoul(m[1]), p.active_mtu);
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(link_layer:\s+(\w+))")));
  EXPECT_EQ(m[1].str(), p.link_layer);
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(node_guid:\s+([0-9a-f:]+))")));
  EXPECT_EQ(m[1].str(), device_.node_guid);

  std::regex gid_line(R"(GID\[\s*(\d+)\]:\s+([0-9a-f:.]+), (RoCE v[12]))");
  std::size_t matched = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), gid_line);
       it != std::sregex_iterator(); ++it) {
    uint32_t index = static_cast<uint32_t>(std::stoul((*it)[1]));
    bool seen = false;
    for (const auto& g : p.gids) {
      if (g.index != index) continue;
      seen = true;
      EXPECT_EQ(g.gid, (*it)[2].str());
      EXPECT_EQ(std::string(rdma::gid_type_name(g.type)), (*it)[3].str());
    }
    EXPECT_TRUE(seen) << "ibv_devinfo lists GID " << index << " which fabric-probe does not";
    ++matched;
  }
  EXPECT_EQ(matched, p.gids.size());
}

TEST_F(DevicesVm, CliJsonShowsTheRoceV2GidForTheVmAddress) {
  auto r = run_subprocess({FABRIC_PROBE_BINARY, "devices", "--json"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->exit_status, 0) << r->stderr_text;
  auto doc = json::parse(r->stdout_text, "fabric-probe devices --json");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  bool found = false;
  for (const auto& d : (*doc)["devices"].GetArray()) {
    if (lab_.rdma_dev != d["name"].GetString()) continue;
    for (const auto& g : d["ports"][0]["gids"].GetArray()) {
      if (g["ipv4"].IsString() && lab_.addr == g["ipv4"].GetString() &&
          std::string("RoCE v2") == g["type"].GetString()) {
        found = true;
      }
    }
  }
  EXPECT_TRUE(found) << r->stdout_text;
}

TEST_F(DevicesVm, VerbsHandlesCreateAndReleaseRealObjects) {
  auto list = verbs::DeviceList::get();
  ASSERT_TRUE(list.ok());
  auto dev = list->find(lab_.rdma_dev);
  ASSERT_TRUE(dev.ok()) << dev.error().message();
  // Twice: if the first round leaked (an owner destroyed out of order), the second
  // still works, but every object must be created and destroyed without error.
  for (int round = 0; round < 2; ++round) {
    auto ctx = verbs::open_device(*dev);
    ASSERT_TRUE(ctx.ok()) << ctx.error().message();
    auto pd = verbs::alloc_pd(ctx->get());
    ASSERT_TRUE(pd.ok()) << pd.error().message();
    std::vector<char> buffer(1 << 16);
    auto mr = verbs::reg_mr(pd->get(), buffer.data(), buffer.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_TRUE(mr.ok()) << mr.error().message();
    auto cq = verbs::create_cq(ctx->get(), 16);
    ASSERT_TRUE(cq.ok()) << cq.error().message();
    ibv_qp_init_attr attr{};
    attr.send_cq = cq->get();
    attr.recv_cq = cq->get();
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 8;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    auto qp = verbs::create_qp(pd->get(), &attr);
    ASSERT_TRUE(qp.ok()) << qp.error().message();
    EXPECT_GT((*qp)->qp_num, 0u);
  }
  auto missing = list->find("mlx5_99");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find(lab_.rdma_dev), std::string::npos);
}

} // namespace
} // namespace fabric
