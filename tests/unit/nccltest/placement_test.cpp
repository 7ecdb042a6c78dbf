// A rank's GPU-NIC placement over the DGX A100 layout of tests/data/probe/topo, whose
// `nvidia-smi topo -m` says GPU0-mlx5_0 PXB and GPU2-mlx5_0 SYS.
#include <gtest/gtest.h>

#include "nccltest/placement.h"

namespace fabric::nccltest {
namespace {

const SysfsReader kDgx(std::string(FABRIC_TEST_DATA_DIR) + "/probe/topo/dgx-a100/sys");

RankInfo gpu_rank(const std::string& bus_id, const std::string& nic, const std::string& source) {
  RankInfo r;
  r.device = 0;
  r.pci_bus_id = bus_id;
  r.nic = NicInfo{nic, source, 200};
  return r;
}

TEST(NcclTestPlacement, NamesTheDistanceAsNvidiaSmiDoes) {
  EXPECT_EQ(gpu_nic_placement(kDgx, gpu_rank("0000:07:00", "mlx5_0/1", "RDMA port rate")),
            "PXB to mlx5_0");
  EXPECT_EQ(gpu_nic_placement(kDgx, gpu_rank("0000:47:00", "mlx5_0/1", "RDMA port rate")),
            "SYS to mlx5_0");
}

TEST(NcclTestPlacement, NothingToSayForHostMemoryANetdevOrAnUnknownDevice) {
  RankInfo host = gpu_rank("host", "mlx5_0/1", "RDMA port rate");
  host.device = -1;
  EXPECT_EQ(gpu_nic_placement(kDgx, host), std::nullopt);
  EXPECT_EQ(gpu_nic_placement(kDgx, gpu_rank("0000:07:00", "eth0", "netdev speed")), std::nullopt);
  EXPECT_EQ(gpu_nic_placement(kDgx, gpu_rank("0000:07:00", "mlx5_99/1", "RDMA port rate")),
            std::nullopt);
}

} // namespace
} // namespace fabric::nccltest
