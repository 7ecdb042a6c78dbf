// Counter snapshots and deltas on sysfs fixtures (tests/data/probe/counters: an mlx5 port
// with PMA and hw counters, an rxe port with hw counters only), copied into a scratch
// folder so that a test can move the counters between two snapshots as a test run would.
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/json.h"
#include "probes/devices/counters.h"

namespace fabric::probes {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ScratchSysfs {
public:
  explicit ScratchSysfs(const std::string& fixture) {
    std::string pattern = (fs::temp_directory_path() / "probe-counters-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
    fs::copy(std::string(FABRIC_TEST_DATA_DIR "/probe/counters/") + fixture, root_,
             fs::copy_options::recursive);
  }
  ~ScratchSysfs() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  SysfsReader reader() const { return SysfsReader(root_); }
  void set(const std::string& device, const std::string& file, uint64_t value) const {
    std::ofstream(root_ + "/class/infiniband/" + device + "/ports/1/" + file) << value << "\n";
  }
  const std::string& root() const { return root_; }

private:
  std::string root_;
};

// What mlx5 reports through ethtool -S, in part: pause counters among many others.
Result<std::vector<EthtoolStat>> mlx5_ethtool(const std::string& netdev, uint64_t pauses) {
  if (netdev != "eth0") {
    return Error::from_errno(ENODEV, "ethtool GSSET_INFO", "no netdev " + netdev);
  }
  return std::vector<EthtoolStat>{{"rx_packets", 1000},          {"tx_bytes", 5000},
                                  {"rx_prio3_pause", pauses},    {"tx_prio3_pause", 1},
                                  {"rx_prio3_bytes", 4096},      {"rx_pause_ctrl_phy", pauses},
                                  {"rx_prio3_pause_duration", 7}};
}

EthtoolReader fixed_ethtool(uint64_t pauses) {
  return [pauses](const std::string& netdev) { return mlx5_ethtool(netdev, pauses); };
}

TEST(Counters, SnapshotNamesEverySource) {
  ScratchSysfs sysfs("mlx5");
  auto snap = read_counters(sysfs.reader(), "mlx5_0", 1, "eth0", fixed_ethtool(5));
  ASSERT_TRUE(snap.ok()) << snap.error().message();
  const auto& v = snap->values;
  EXPECT_EQ(v.at("port.xmit_bytes"), 1000000000u); // port_xmit_data counts 4-byte words
  EXPECT_EQ(v.at("port.rcv_bytes"), 500000000u);
  EXPECT_EQ(v.at("port.xmit_packets"), 250000u);
  EXPECT_EQ(v.at("port.rcv_packets"), 125000u);
  EXPECT_EQ(v.at("port.port_xmit_wait"), 17u);
  EXPECT_EQ(v.count("port.port_xmit_data"), 0u);
  EXPECT_EQ(v.at("hw.rp_cnp_handled"), 12u);
  EXPECT_EQ(v.at("hw.np_ecn_marked_roce_packets"), 3u);
  EXPECT_EQ(v.count("hw.lifespan"), 0u) << "a setting, not a counter";
  EXPECT_EQ(v.at("eth.rx_prio3_pause"), 5u);
  EXPECT_EQ(v.at("eth.rx_pause_ctrl_phy"), 5u);
  EXPECT_EQ(v.at("eth.rx_prio3_pause_duration"), 7u);
  EXPECT_EQ(v.count("eth.rx_packets"), 0u);
  EXPECT_EQ(v.count("eth.rx_prio3_bytes"), 0u);
  EXPECT_TRUE(snap->notes.empty());
}

TEST(Counters, DeltaOverARunWithRatesInTheText) {
  ScratchSysfs sysfs("mlx5");
  auto before = read_counters(sysfs.reader(), "mlx5_0", 1, "eth0", fixed_ethtool(5));
  ASSERT_TRUE(before.ok());
  sysfs.set("mlx5_0", "counters/port_xmit_data", 250000000 + 312500000); // +1.25 GB
  sysfs.set("mlx5_0", "hw_counters/rp_cnp_handled", 40);
  auto after = read_counters(sysfs.reader(), "mlx5_0", 1, "eth0", fixed_ethtool(9));
  ASSERT_TRUE(after.ok());
  // The clock is the caller's; fix it so that rates are exact.
  before->taken = std::chrono::steady_clock::time_point{};
  after->taken = before->taken + 1s;

  CounterDelta d = delta(*before, *after);
  EXPECT_DOUBLE_EQ(d.seconds, 1.0);
  EXPECT_EQ(d.values.at("port.xmit_bytes"), 1250000000u);
  EXPECT_EQ(d.values.at("port.rcv_bytes"), 0u);
  EXPECT_EQ(d.values.at("hw.rp_cnp_handled"), 28u);
  EXPECT_EQ(d.values.at("eth.rx_prio3_pause"), 4u);
  EXPECT_EQ(d.values.at("eth.tx_prio3_pause"), 0u);

  std::string text = render_counters_text(d);
  EXPECT_NE(text.find("xmit_bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("(10.00 Gb/s)"), std::string::npos) << text;
  EXPECT_NE(text.find("rp_cnp_handled"), std::string::npos) << text;
  EXPECT_NE(text.find("rx_prio3_pause "), std::string::npos) << text;
  // Counters that did not move are summarized, not listed.
  EXPECT_EQ(text.find("tx_prio3_pause"), std::string::npos) << text;
  EXPECT_EQ(text.find("out_of_sequence"), std::string::npos) << text;
  EXPECT_NE(text.find("5 more at 0"), std::string::npos) << text;
}

TEST(Counters, JsonGroupsAreStableAndParse) {
  ScratchSysfs sysfs("rxe");
  auto before = read_counters(sysfs.reader(), "rxe0", 1, "", fixed_ethtool(0));
  ASSERT_TRUE(before.ok());
  sysfs.set("rxe0", "hw_counters/sent_pkts", 1500);
  auto after = read_counters(sysfs.reader(), "rxe0", 1, "", fixed_ethtool(0));
  ASSERT_TRUE(after.ok());
  json::Writer w;
  write_counters_json(w, delta(*before, *after));
  auto doc = json::parse(w.str(), "counters");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  ASSERT_TRUE((*doc)["seconds"].IsNumber());
  EXPECT_GE((*doc)["seconds"].GetDouble(), 0.0);
  ASSERT_TRUE((*doc)["port"].IsObject());
  EXPECT_EQ((*doc)["port"].MemberCount(), 0u); // rxe has no PMA counters
  EXPECT_EQ((*doc)["hw"]["sent_pkts"].GetUint64(), 500u);
  EXPECT_EQ((*doc)["hw"]["rdma_sends"].GetUint64(), 0u);
  EXPECT_EQ((*doc)["eth"].MemberCount(), 0u);
  std::string notes;
  for (const auto& n : (*doc)["notes"].GetArray())
    notes += std::string(n.GetString()) + "\n";
  EXPECT_NE(notes.find("rxe0 port 1 has no port counters"), std::string::npos) << notes;
  EXPECT_NE(notes.find("no netdev given"), std::string::npos) << notes;
}

TEST(Counters, MissingSourcesAreNotedNotFatal) {
  ScratchSysfs sysfs("mlx5");
  fs::remove_all(sysfs.root() + "/class/infiniband/mlx5_0/ports/1/hw_counters");
  // A counter file the driver refuses to read (here: a directory, which fails on read).
  fs::remove(sysfs.root() + "/class/infiniband/mlx5_0/ports/1/counters/port_rcv_errors");
  fs::create_directory(sysfs.root() + "/class/infiniband/mlx5_0/ports/1/counters/port_rcv_errors");
  EthtoolReader unsupported = [](const std::string&) -> Result<std::vector<EthtoolStat>> {
    return Error::from_errno(EOPNOTSUPP, "ethtool GSSET_INFO", "no statistics");
  };
  auto snap = read_counters(sysfs.reader(), "mlx5_0", 1, "eth0", unsupported);
  ASSERT_TRUE(snap.ok()) << snap.error().message();
  EXPECT_EQ(snap->values.at("port.xmit_bytes"), 1000000000u);
  EXPECT_EQ(snap->values.count("port.port_rcv_errors"), 0u);
  std::string notes;
  for (const auto& n : snap->notes)
    notes += n + "\n";
  EXPECT_NE(notes.find("has no hw_counters"), std::string::npos) << notes;
  EXPECT_NE(notes.find("port counter port_rcv_errors unreadable"), std::string::npos) << notes;
  EXPECT_NE(notes.find("no Ethernet pause counters for eth0"), std::string::npos) << notes;

  // A driver whose statistics have no pause counters at all.
  EthtoolReader plain = [](const std::string&) -> Result<std::vector<EthtoolStat>> {
    return std::vector<EthtoolStat>{{"peer_ifindex", 7}};
  };
  auto veth_like = read_counters(sysfs.reader(), "mlx5_0", 1, "eth0", plain);
  ASSERT_TRUE(veth_like.ok());
  EXPECT_EQ(veth_like->values.count("eth.peer_ifindex"), 0u);
  EXPECT_NE(veth_like->notes.back().find("have no pause counters"), std::string::npos);
}

TEST(Counters, MissingPortOrNetdevIsAnError) {
  ScratchSysfs sysfs("mlx5");
  auto port = read_counters(sysfs.reader(), "mlx5_0", 2, "eth0", fixed_ethtool(0));
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(port.error().message().find("mlx5_0 port 2"), std::string::npos);
  auto netdev = read_counters(sysfs.reader(), "mlx5_0", 1, "eth7", fixed_ethtool(0));
  ASSERT_FALSE(netdev.ok());
  EXPECT_EQ(netdev.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(netdev.error().message().find("eth7"), std::string::npos) << netdev.error().message();
}

TEST(Counters, ResetSaturatedAndChangingCountersAreLeftOutAndNoted) {
  ScratchSysfs sysfs("mlx5");
  auto before = read_counters(sysfs.reader(), "mlx5_0", 1, "eth0", fixed_ethtool(5));
  ASSERT_TRUE(before.ok());
  sysfs.set("mlx5_0", "hw_counters/rp_cnp_handled", 2);         // was 12: reset
  sysfs.set("mlx5_0", "counters/port_rcv_data", 0xFFFFFFFFull); // legacy, saturated
  sysfs.set("mlx5_0", "hw_counters/rx_icrc_encapsulated", 1);   // new file
  auto after = read_counters(sysfs.reader(), "mlx5_0", 1, "eth0", fixed_ethtool(5));
  ASSERT_TRUE(after.ok());
  CounterDelta d = delta(*before, *after);
  EXPECT_EQ(d.values.count("hw.rp_cnp_handled"), 0u);
  EXPECT_EQ(d.values.count("port.rcv_bytes"), 0u);
  EXPECT_EQ(d.values.count("hw.rx_icrc_encapsulated"), 0u);
  EXPECT_EQ(d.values.at("port.xmit_bytes"), 0u);
  std::string notes;
  for (const auto& n : d.notes)
    notes += n + "\n";
  EXPECT_NE(notes.find("hw.rp_cnp_handled went backwards (12 -> 2"), std::string::npos) << notes;
  EXPECT_NE(notes.find("port_rcv_data is saturated"), std::string::npos) << notes;
  EXPECT_NE(notes.find("port.rcv_bytes disappeared"), std::string::npos) << notes;
  EXPECT_NE(notes.find("hw.rx_icrc_encapsulated appeared"), std::string::npos) << notes;
}

TEST(Counters, PauseFilterMatchesPerPriorityAndGlobalNames) {
  EXPECT_TRUE(is_pause_stat("rx_prio3_pause"));
  EXPECT_TRUE(is_pause_stat("tx_prio7_pause_duration"));
  EXPECT_TRUE(is_pause_stat("rx_pause_ctrl_phy"));
  EXPECT_FALSE(is_pause_stat("rx_prio3_bytes"));
  EXPECT_FALSE(is_pause_stat("peer_ifindex"));
}

} // namespace
} // namespace fabric::probes
