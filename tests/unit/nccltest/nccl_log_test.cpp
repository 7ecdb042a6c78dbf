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

} // namespace
} // namespace fabric::nccltest
