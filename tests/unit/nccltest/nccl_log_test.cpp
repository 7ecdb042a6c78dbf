// Transport sanity from NCCL's INFO log, on captured lines (tests/data/nccltest).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "nccltest/nccl_log.h"

namespace fabric::nccltest {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(FABRIC_TEST_DATA_DIR) + "/nccltest/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(NcclLog, RoceWithGpuDirectRdma) {
  TransportReport r = parse_nccl_log(fixture("nccl_info_roce.log"));
  EXPECT_TRUE(r.any_line);
  EXPECT_EQ(r.network, "IB");
  EXPECT_TRUE(uses_rdma(r));
  EXPECT_FALSE(socket_fallback(r));
  EXPECT_EQ(r.ib_devices, (std::vector<std::string>{"mlx5_0:1/RoCE", "mlx5_1:1/RoCE"}));
  EXPECT_EQ(r.gid_index, 3);
  EXPECT_EQ(r.traffic_class, 106);
  EXPECT_EQ(r.gpudirect_rdma, true);
  EXPECT_EQ(r.net_channels, 3);
  EXPECT_EQ(r.p2p_channels, 2);
  EXPECT_EQ(render_transport_lines(r),
            "# Transport: network IB over mlx5_0:1/RoCE mlx5_1:1/RoCE, GID index 3, traffic class "
            "106, GPUDirect RDMA on; channels: 3 NET, 2 P2P, 0 SHM\n");
}

TEST(NcclLog, SocketFallbackIsALoudWarning) {
  TransportReport r = parse_nccl_log(fixture("nccl_info_socket_fallback.log"));
  EXPECT_EQ(r.network, "Socket");
  EXPECT_FALSE(uses_rdma(r));
  EXPECT_TRUE(socket_fallback(r));
  EXPECT_EQ(r.socket_devices, std::vector<std::string>{"ens22f0:10.1.15.173<0>"});
  EXPECT_EQ(r.gpudirect_rdma, false);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0], "Call to ibv_open_device failed");
  std::string text = render_transport_lines(r);
  EXPECT_NE(text.find("# WARNING: NCCL FELL BACK TO SOCKETS (NET/Socket)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("traffic class default (0)"), std::string::npos);
}

TEST(NcclLog, GpuDirectIsOffWhenAnyNetChannelStagesThroughTheHost) {
  TransportReport r =
      parse_nccl_log("h:1:2 [0] NCCL INFO Using network IB\n"
                     "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
                     "h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/1\n");
  EXPECT_EQ(r.gpudirect_rdma, false);
}

TEST(NcclLog, NothingCapturedSaysUnknown) {
  TransportReport r = parse_nccl_log("no nccl here\n\xff\xfe garbage");
  EXPECT_FALSE(r.any_line);
  EXPECT_FALSE(r.gpudirect_rdma.has_value());
  EXPECT_EQ(render_transport_lines(r), "# Transport: unknown (no NCCL INFO log was captured)\n");
}

// The user's NCCL log settings are never overridden; only when they set none is NCCL's INFO
// log captured (and its warnings relayed).
TEST(NcclLogPlan, AUsersNcclDebugIsLeftAlone) {
  NcclLogPlan warn = plan_nccl_log("WARN", nullptr, nullptr, "/tmp/x");
  EXPECT_FALSE(warn.capture);
  EXPECT_TRUE(warn.set.empty());
  EXPECT_EQ(warn.note,
            "NCCL's log follows your NCCL_DEBUG=WARN; the transport is not read from it");
  NcclLogPlan info = plan_nccl_log("INFO", nullptr, nullptr, "/tmp/x");
  EXPECT_FALSE(info.capture); // INFO on the console, as asked
  NcclLogPlan file = plan_nccl_log(nullptr, "/var/log/nccl.%h.%p", nullptr, "/tmp/x");
  EXPECT_FALSE(file.capture);
  EXPECT_NE(file.note.find("NCCL_DEBUG_FILE"), std::string::npos);
}

TEST(NcclLogPlan, NothingSetIsCapturedToThePrivateFolder) {
  using Vars = std::vector<std::pair<std::string, std::string>>;
  NcclLogPlan plan = plan_nccl_log(nullptr, nullptr, nullptr, "/tmp/fabric-nccltest.abc");
  EXPECT_TRUE(plan.capture);
  EXPECT_EQ(plan.set, (Vars{{"NCCL_DEBUG", "INFO"},
                            {"NCCL_DEBUG_FILE", "/tmp/fabric-nccltest.abc/nccl.%h.%p"},
                            {"NCCL_DEBUG_SUBSYS", "INIT,NET,ENV"}}));
  // Empty values count as unset; the user's subsystems are kept.
  NcclLogPlan subsys = plan_nccl_log("", "", "INIT,COLL", "/d");
  EXPECT_TRUE(subsys.capture);
  EXPECT_EQ(subsys.set, (Vars{{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_FILE", "/d/nccl.%h.%p"}}));
}

TEST(NcclLogPlan, WarnLinesAreFoundForRelaying) {
  const std::string log = "node1:1:1 [0] NCCL INFO Bootstrap : Using eth0\n"
                          "node1:1:2 [0] NCCL WARN NET/IB : Got async event : port error\n"
                          "node1:1:1 [0] NCCL INFO Using network IB\n"
                          "node1:1:3 [0] NCCL WARN Call to ibv_modify_qp failed";
  EXPECT_EQ(
      nccl_warn_lines(log),
      (std::vector<std::string>{"node1:1:2 [0] NCCL WARN NET/IB : Got async event : port error",
                                "node1:1:3 [0] NCCL WARN Call to ibv_modify_qp failed"}));
  EXPECT_EQ(nccl_warn_lines(log, 1).size(), 1u);
}

} // namespace
} // namespace fabric::nccltest
