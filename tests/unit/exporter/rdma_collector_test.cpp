// The RDMA collector on sysfs trees of mlx5 (PMA counters, one reading N/A), bnxt_re (no
// counters directory) and rxe (soft-RoCE: packets only), and on a tree where a device
// vanished and a file cannot be read.
#include <sys/stat.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "exporters/rdma_collector.h"
#include "exporters/rdma_counter_names.h"
#include "tests/unit/exporter/metrics_view.h"

namespace fabric::exporters {
namespace {

using testing::collect;
using testing::value;
namespace fs = std::filesystem;

SysfsReader fixture(const std::string& driver) {
  return SysfsReader(FABRIC_TEST_DATA_DIR "/exporter/sysfs/" + driver);
}

testing::LabelMap port(const std::string& device, testing::LabelMap extra = {}) {
  extra["device"] = device;
  extra["port"] = "1";
  return extra;
}

TEST(RdmaCollector, Mlx5PortCountersInBytesAndRoceHwCounters) {
  RdmaCollector collector(fixture("mlx5"));
  auto c = collect(collector);
  ASSERT_TRUE(c.ok);
  const auto& f = c.families;
  EXPECT_EQ(value(f, "fabric_rdma_port_state", port("mlx5_0")), 4);
  EXPECT_EQ(value(f, "fabric_rdma_port_physical_state", port("mlx5_0")), 5);
  EXPECT_EQ(value(f, "fabric_rdma_port_rate_bytes_per_second", port("mlx5_0")), 12.5e9);
  EXPECT_EQ(value(f, "fabric_rdma_port_active_mtu_bytes", port("mlx5_0")), 4096)
      << "netdev MTU 9000";
  EXPECT_EQ(value(f, "fabric_rdma_port_info",
                  port("mlx5_0", {{"link_layer", "Ethernet"}, {"netdev", "ens1f0np0"}})),
            1);
  // port_xmit_data and port_rcv_data count 4-byte words.
  EXPECT_EQ(value(f, "fabric_rdma_port_data_bytes_total", port("mlx5_0", {{"direction", "tx"}})),
            1e9);
  EXPECT_EQ(value(f, "fabric_rdma_port_data_bytes_total", port("mlx5_0", {{"direction", "rx"}})),
            5e8);
  EXPECT_EQ(value(f, "fabric_rdma_port_packets_total", port("mlx5_0", {{"direction", "tx"}})), 3e5);
  EXPECT_EQ(value(f, "fabric_rdma_port_errors_total",
                  port("mlx5_0", {{"counter", "port_xmit_discards"}})),
            3);
  EXPECT_EQ(value(f, "fabric_rdma_port_errors_total", port("mlx5_0", {{"counter", "link_downed"}})),
            2);
  EXPECT_FALSE(
      value(f, "fabric_rdma_port_errors_total", port("mlx5_0", {{"counter", "port_xmit_wait"}})))
      << "a wait-tick counter, not an error";
  EXPECT_EQ(value(f, "fabric_rdma_port_transmit_wait_total", port("mlx5_0")), 5000);
  EXPECT_EQ(value(f, "fabric_rdma_rnr_nak_retry_errors_total", port("mlx5_0")), 6);
  EXPECT_EQ(value(f, "fabric_rdma_device_info",
                  {{"device", "mlx5_0"},
                   {"board_id", "MT_0000000838"},
                   {"firmware_version", "28.39.1002"},
                   {"hca_type", "MT4129"}}),
            1);
  EXPECT_EQ(value(f, "fabric_rdma_cnp_sent_total", port("mlx5_0")), 12);
  EXPECT_EQ(value(f, "fabric_rdma_cnp_handled_total", port("mlx5_0")), 10);
  EXPECT_EQ(value(f, "fabric_rdma_cnp_ignored_total", port("mlx5_0")), 0);
  EXPECT_EQ(value(f, "fabric_rdma_ecn_marked_packets_total", port("mlx5_0")), 34);
  EXPECT_EQ(value(f, "fabric_rdma_out_of_sequence_total", port("mlx5_0")), 5);
  EXPECT_EQ(value(f, "fabric_rdma_packet_sequence_errors_total", port("mlx5_0")), 2);
  EXPECT_EQ(value(f, "fabric_rdma_local_ack_timeouts_total", port("mlx5_0")), 1);
  EXPECT_EQ(value(f, "fabric_rdma_retransmits_total", port("mlx5_0")), 4);
  EXPECT_EQ(value(f, "fabric_rdma_out_of_buffer_total", port("mlx5_0")), 7);
  EXPECT_EQ(value(f, "fabric_rdma_implied_nak_total", port("mlx5_0")), 0);
  EXPECT_EQ(value(f, "fabric_rdma_duplicate_requests_total", port("mlx5_0")), 3);
  EXPECT_EQ(
      value(f, "fabric_rdma_port_counters_present", port("mlx5_0", {{"directory", "counters"}})),
      1);
}

TEST(RdmaCollector, ACounterReadingNACostsOnlyItsSeriesAndCountsAnError) {
  RdmaCollector collector(fixture("mlx5"));
  auto c = collect(collector);
  EXPECT_FALSE(value(c.families, "fabric_rdma_port_errors_total",
                     port("mlx5_0", {{"counter", "port_rcv_constraint_errors"}})));
  EXPECT_EQ(c.errors, 1u);
  ASSERT_FALSE(c.messages.empty());
  EXPECT_NE(c.messages[0].find("N/A (no PMA)"), std::string::npos) << c.messages[0];
}

TEST(RdmaCollector, BnxtReWithoutCountersDirectoryTakesBytesFromHwCounters) {
  RdmaCollector collector(fixture("bnxt_re"));
  auto c = collect(collector);
  const auto& f = c.families;
  EXPECT_EQ(c.errors, 0u) << "a missing counters directory is a fact, not an error";
  EXPECT_EQ(
      value(f, "fabric_rdma_port_counters_present", port("bnxt_re0", {{"directory", "counters"}})),
      0);
  EXPECT_EQ(value(f, "fabric_rdma_port_counters_present",
                  port("bnxt_re0", {{"directory", "hw_counters"}})),
            1);
  EXPECT_EQ(value(f, "fabric_rdma_port_data_bytes_total", port("bnxt_re0", {{"direction", "tx"}})),
            2e6);
  EXPECT_EQ(value(f, "fabric_rdma_port_packets_total", port("bnxt_re0", {{"direction", "rx"}})),
            1000);
  EXPECT_EQ(value(f, "fabric_rdma_cnp_sent_total", port("bnxt_re0")), 5);
  EXPECT_EQ(value(f, "fabric_rdma_cnp_handled_total", port("bnxt_re0")), 6);
  EXPECT_EQ(value(f, "fabric_rdma_ecn_marked_packets_total", port("bnxt_re0")), 7);
  EXPECT_EQ(value(f, "fabric_rdma_local_ack_timeouts_total", port("bnxt_re0")), 8);
  EXPECT_EQ(value(f, "fabric_rdma_packet_sequence_errors_total", port("bnxt_re0")), 9);
  EXPECT_EQ(value(f, "fabric_rdma_out_of_buffer_total", port("bnxt_re0")), 10);
  EXPECT_EQ(value(f, "fabric_rdma_duplicate_requests_total", port("bnxt_re0")), 11);
  EXPECT_EQ(value(f, "fabric_rdma_port_active_mtu_bytes", port("bnxt_re0")), 1024) << "MTU 1500";
  EXPECT_EQ(value(f, "fabric_rdma_port_rate_bytes_per_second", port("bnxt_re0")), 25e9);
}

TEST(RdmaCollector, RxeHasPacketsButNoBytes) {
  RdmaCollector collector(fixture("rxe"));
  auto c = collect(collector);
  const auto& f = c.families;
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(value(f, "fabric_rdma_port_packets_total", port("rxe0", {{"direction", "tx"}})), 4096);
  EXPECT_EQ(value(f, "fabric_rdma_port_packets_total", port("rxe0", {{"direction", "rx"}})), 4100);
  EXPECT_EQ(testing::find_family(f, "fabric_rdma_port_data_bytes_total"), nullptr);
  EXPECT_EQ(
      value(f, "fabric_rdma_port_counters_present", port("rxe0", {{"directory", "counters"}})), 0);
  EXPECT_EQ(value(f, "fabric_rdma_retransmits_total", port("rxe0")), 3);
  EXPECT_EQ(
      value(f, "fabric_rdma_device_info",
            {{"device", "rxe0"}, {"board_id", ""}, {"firmware_version", ""}, {"hca_type", ""}}),
      1)
      << "files rxe lacks are empty labels, not errors";
  EXPECT_EQ(value(f, "fabric_rdma_out_of_sequence_total", port("rxe0")), 1);
  EXPECT_EQ(value(f, "fabric_rdma_packet_sequence_errors_total", port("rxe0")), 2);
  EXPECT_EQ(value(f, "fabric_rdma_port_rate_bytes_per_second", port("rxe0")), 2.5e9 / 8);
}

// A copy of the mlx5 tree with a second device whose sysfs directory is gone (a dangling
// class link, as when a device is removed mid-scrape) and an hw counter that cannot be read.
class RdmaCollectorDamaged : public ::testing::Test {
protected:
  void SetUp() override {
    char dir[] = "/tmp/fabric-rdma-sysfs-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root_ = dir;
    fs::copy(FABRIC_TEST_DATA_DIR "/exporter/sysfs/mlx5", root_, fs::copy_options::recursive);
    fs::create_directory_symlink(root_ + "/devices/gone/mlx5_1",
                                 root_ + "/class/infiniband/mlx5_1");
    const std::string counter = root_ + "/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent";
    fs::remove(counter);
    fs::create_directory(counter); // read() fails with EISDIR
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(RdmaCollectorDamaged, AVanishedDeviceAndAnUnreadableFileCostOnlyTheirSeries) {
  RdmaCollector collector{SysfsReader(root_)};
  auto c = collect(collector);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.errors, 3u) << "N/A, the unreadable counter and the vanished device";
  EXPECT_FALSE(value(c.families, "fabric_rdma_cnp_sent_total", port("mlx5_0")));
  EXPECT_EQ(value(c.families, "fabric_rdma_cnp_handled_total", port("mlx5_0")), 10);
  EXPECT_EQ(value(c.families, "fabric_rdma_port_state", port("mlx5_0")), 4);
  EXPECT_FALSE(value(c.families, "fabric_rdma_port_state", port("mlx5_1")));
  bool named = false;
  for (const auto& m : c.messages)
    named |= m.find("mlx5_1") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(RdmaCollector, ConfiguredDevicesOnly) {
  RdmaCollector collector(fixture("mlx5"), {"mlx5_7"});
  auto c = collect(collector);
  EXPECT_EQ(testing::find_family(c.families, "fabric_rdma_port_state"), nullptr);
  EXPECT_EQ(c.errors, 1u) << "a configured device that does not exist";
}

TEST(RdmaCollector, ParsesKernelTexts) {
  EXPECT_EQ(parse_port_state("4: ACTIVE"), 4u);
  EXPECT_EQ(parse_port_state("1: DOWN"), 1u);
  EXPECT_FALSE(parse_port_state("ACTIVE"));
  EXPECT_EQ(parse_rate_bytes_per_second("400 Gb/sec (4X NDR)"), 50e9);
  EXPECT_EQ(parse_rate_bytes_per_second("2.5 Gb/sec (1X SDR)"), 2.5e9 / 8);
  EXPECT_EQ(parse_rate_bytes_per_second("800 Mb/sec"), 1e8);
  EXPECT_FALSE(parse_rate_bytes_per_second("fast"));
}

TEST(RdmaCollector, RoceMtuFollowsTheNetdevMtuAsTheKernelComputesIt) {
  EXPECT_EQ(roce_mtu_for_netdev_mtu(9000), 4096u);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(4200), 4096u);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(4191), 2048u); // 4096 + 96 header bytes needed
  EXPECT_EQ(roce_mtu_for_netdev_mtu(1500), 1024u);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(352), 256u);
  EXPECT_EQ(roce_mtu_for_netdev_mtu(300), 0u);
}

TEST(RdmaCounterNames, EachVendorNameMapsToOneFamily) {
  EXPECT_EQ(hw_counter("np_cnp_sent")->family, hw_counter("cnp_tx_pkts")->family);
  EXPECT_EQ(hw_counter("out_of_sequence")->family, hw_counter("out_of_seq_request")->family);
  EXPECT_EQ(hw_counter("packet_seq_err")->family, hw_counter("rcvd_seq_err")->family);
  EXPECT_FALSE(hw_counter("rx_write_requests"));
  EXPECT_FALSE(hw_counter("lifespan"));
  EXPECT_EQ(port_data_counter("port_xmit_data")->scale, 4u);
  EXPECT_EQ(port_data_counter("port_rcv_packets")->direction, "rx");
  EXPECT_TRUE(is_port_error_counter("symbol_error"));
  EXPECT_FALSE(is_port_error_counter("port_xmit_wait"));
  EXPECT_EQ(hw_data_counter("sent_pkts")->family, "fabric_rdma_port_packets_total");
}

} // namespace
} // namespace fabric::exporters
