// fabric-probe topo: the text and JSON reports over the fixtures of tests/data/probe/topo,
// and the built binary, over a fixture and over this machine's own /sys.
#include <gtest/gtest.h>

#include "common/json.h"
#include "common/subprocess.h"
#include "libs/topology/node_topology.h"
#include "probes/topology/topo_report.h"

namespace fabric::probes {
namespace {

const std::string kTopo = FABRIC_TEST_DATA_DIR "/probe/topo/";

topo::NodeTopology read_fixture(const std::string& name) {
  topo::TopologySources sources;
  sources.root = kTopo + name;
  auto node = topo::read_node_topology(sources);
  EXPECT_TRUE(node.ok()) << node.error().message();
  return node.ok() ? std::move(*node) : topo::NodeTopology{};
}

rapidjson::Document parse(const std::string& text) {
  auto doc = json::parse(text, "topo --json");
  EXPECT_TRUE(doc.ok()) << doc.error().message();
  return doc.ok() ? std::move(*doc) : rapidjson::Document();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TopoReport, TextHasTheMatrixRowsNvidiaSmiPrints) {
  std::string text = render_topology_text(read_fixture("two-socket"));
  // The header and GPU0's row, with its affinity columns.
  EXPECT_TRUE(contains(text, "        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    "
                             "GPU7    NIC0    CPU Affinity  NUMA Affinity\n"))
      << text;
  EXPECT_TRUE(contains(text, "GPU0    X       PIX     PHB     PHB     SYS     SYS     SYS     SYS  "
                             "   PHB     0-9,20-29     0\n"))
      << text;
  EXPECT_TRUE(contains(text, "NIC0    PHB     PHB     PHB     PHB     SYS     SYS     SYS     SYS  "
                             "   X\n"))
      << text;
  EXPECT_TRUE(contains(text, "  PIX  = Connection traversing at most a single PCIe bridge\n"));
  EXPECT_TRUE(contains(text, "NIC Legend:\n\n  NIC0: mlx4_0\n"));
  EXPECT_TRUE(contains(text, "  GPU0: NIC0 mlx4_0 (PHB)\n"));
  EXPECT_TRUE(contains(text, "  GPU4: NIC0 mlx4_0 (SYS)\n"));
  EXPECT_TRUE(contains(text, "  NIC0 mlx4_0: no: no peer-memory module")) << text;
  EXPECT_FALSE(contains(text, "CUDA runtime")) << "not asked";
  EXPECT_FALSE(contains(text, " \n")) << "trailing blanks";
}

TEST(TopoReport, TextListsDevicesAndGpuDirectPerNic) {
  std::string text = render_topology_text(read_fixture("dgx-a100"));
  EXPECT_TRUE(contains(text, "  GPU0  0000:07:00.0  10de:20b0  NVIDIA A100-SXM4-40GB  NUMA 3\n"))
      << text;
  EXPECT_TRUE(contains(text, "  NIC0  mlx5_0   0000:0c:00.0  NUMA 3  mlx5_core  enp12s0np0\n"))
      << text;
  EXPECT_TRUE(contains(text, "        port 1 ACTIVE Ethernet, RoCE v2 GIDs: 1 "
                             "fe80::b859:9fff:fed4:e2a 3 ::ffff:10.10.0.1\n"))
      << text;
  EXPECT_TRUE(contains(text, "GPUDirect RDMA: nvidia_peermem loaded; kernel 5.4.0-99-generic"))
      << text;
  EXPECT_TRUE(contains(text, "  NIC0 mlx5_0: via nvidia-peermem; NCCL uses it with GPU0 GPU1; "
                             "not by default with GPU2 GPU3 GPU4 GPU5 GPU6 GPU7 (beyond PXB)\n"))
      << text;
  EXPECT_TRUE(contains(text, "  GPU0: NIC0 mlx5_0, NIC1 mlx5_1 (PXB)\n")) << text;
  EXPECT_TRUE(contains(text, "NVLink (nvidia-smi's NV#) is not visible in sysfs")) << text;
}

TEST(TopoReport, SoftRoceIsListedWithoutDistance) {
  std::string text = render_topology_text(read_fixture("cpu-node"));
  EXPECT_TRUE(contains(text, "no GPU found")) << text;
  EXPECT_TRUE(contains(text, "  NIC2  rxe0    software RDMA device, no PCI function  eth0\n"))
      << text;
  EXPECT_TRUE(contains(text, "NIC0    X       PIX     -\n")) << text;
  EXPECT_TRUE(contains(text, "NIC2    -       -       X\n")) << text;
  EXPECT_FALSE(contains(text, "CPU Affinity")) << "no GPU rows, no affinity columns";
  EXPECT_FALSE(contains(text, "Closest NICs")) << text;
}

TEST(TopoReport, JsonShape) {
  auto doc = parse(render_topology_json(read_fixture("dgx-a100")));
  EXPECT_EQ(doc["schema_version"].GetInt(), 1);
  ASSERT_EQ(doc["gpus"].Size(), 8u);
  const auto& gpu = doc["gpus"][0];
  EXPECT_STREQ(gpu["name"].GetString(), "GPU0");
  EXPECT_STREQ(gpu["pci_address"].GetString(), "0000:07:00.0");
  EXPECT_EQ(gpu["numa_node"].GetInt(), 3);
  EXPECT_STREQ(gpu["cpu_affinity"].GetString(), "48-63,176-191");
  EXPECT_STREQ(gpu["device_id"].GetString(), "0x20b0");
  EXPECT_STREQ(gpu["uuid"].GetString(), "GPU-a100a100-0000-4000-8000-000000000000");
  EXPECT_TRUE(gpu["cuda_index"].IsNull());
  EXPECT_STREQ(gpu["closest_nics"]["distance"].GetString(), "PXB");
  ASSERT_EQ(gpu["closest_nics"]["nics"].Size(), 2u);
  EXPECT_STREQ(gpu["closest_nics"]["nics"][1].GetString(), "NIC1");

  ASSERT_EQ(doc["nics"].Size(), 12u);
  const auto& nic = doc["nics"][0];
  EXPECT_STREQ(nic["rdma_device"].GetString(), "mlx5_0");
  EXPECT_STREQ(nic["pci_address"].GetString(), "0000:0c:00.0");
  EXPECT_STREQ(nic["driver"].GetString(), "mlx5_core");
  EXPECT_STREQ(nic["netdevs"][0].GetString(), "enp12s0np0");
  EXPECT_STREQ(nic["ports"][0]["roce_v2_gids"][1]["ipv4"].GetString(), "10.10.0.1");
  ASSERT_EQ(nic["gpudirect"].Size(), 8u);
  EXPECT_TRUE(nic["gpudirect"][0]["nccl_uses"].GetBool());
  EXPECT_STREQ(nic["gpudirect"][0]["via"].GetString(), "nvidia-peermem");
  EXPECT_TRUE(nic["gpudirect"][0]["reason"].IsNull());
  EXPECT_FALSE(nic["gpudirect"][2]["nccl_uses"].GetBool());

  EXPECT_STREQ(doc["distances"]["GPU0"]["NIC1"].GetString(), "PXB");
  EXPECT_STREQ(doc["distances"]["NIC1"]["GPU0"].GetString(), "PXB");
  EXPECT_STREQ(doc["distances"]["GPU0"]["GPU0"].GetString(), "X");
  EXPECT_STREQ(doc["distances"]["NIC4"]["NIC5"].GetString(), "PIX");
  EXPECT_STREQ(doc["gpudirect"]["peer_memory"].GetString(), "nvidia_peermem");
  EXPECT_FALSE(doc["gpudirect"]["nvidia_open_module"].GetBool());
  EXPECT_FALSE(doc["cuda"]["asked"].GetBool());
  EXPECT_FALSE(doc.HasMember("message"));
}

TEST(TopoReport, JsonNullsWhereNoPciFunction) {
  auto doc = parse(render_topology_json(read_fixture("cpu-node")));
  EXPECT_EQ(doc["gpus"].Size(), 0u);
  const auto& rxe = doc["nics"][2];
  EXPECT_STREQ(rxe["rdma_device"].GetString(), "rxe0");
  EXPECT_TRUE(rxe["pci_address"].IsNull());
  EXPECT_TRUE(rxe["numa_node"].IsNull());
  EXPECT_TRUE(rxe["driver"].IsNull());
  EXPECT_TRUE(doc["distances"]["NIC0"]["NIC2"].IsNull());
  EXPECT_STREQ(doc["distances"]["NIC2"]["NIC2"].GetString(), "X");
}

TEST(TopoReport, NothingToPair) {
  topo::NodeTopology empty;
  EXPECT_EQ(render_topology_text(empty), std::string(kNoGpuNoNic) + "\n");
  auto doc = parse(render_topology_json(empty));
  EXPECT_STREQ(doc["message"].GetString(), kNoGpuNoNic);
  EXPECT_EQ(doc["gpus"].Size(), 0u);
  EXPECT_TRUE(doc["distances"].ObjectEmpty());
}

// --- the binary ---------------------------------------------------------------------------

TEST(TopoCli, OverAFixture) {
  auto run = run_subprocess({FABRIC_PROBE_BINARY, "topo", "--json", "--root", kTopo + "hgx-h800"});
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(run->exit_status, 0) << run->stderr_text;
  auto doc = parse(run->stdout_text);
  EXPECT_EQ(doc["gpus"].Size(), 8u);
  EXPECT_STREQ(doc["distances"]["GPU4"]["NIC1"].GetString(), "PIX");
  // --root means another machine: the CUDA runtime, which sees this one, is not asked.
  EXPECT_FALSE(doc["cuda"]["asked"].GetBool());
  EXPECT_STREQ(doc["nics"][2]["gpudirect"][0]["via"].GetString(), "dma-buf");
}

TEST(TopoCli, AMissingRootIsAUsageError) {
  // Not "no GPU": a mistyped folder must not pass for an empty node.
  auto run = run_subprocess({FABRIC_PROBE_BINARY, "topo", "--root", kTopo + "no-such-node"});
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(run->exit_status, 1) << run->stderr_text;
  EXPECT_TRUE(contains(run->stderr_text, "no-such-node")) << run->stderr_text;
  EXPECT_EQ(run->stdout_text, "");
}

bool host_has_gpu_or_rdma() {
  auto node = topo::read_node_topology({});
  return !node.ok() || !node->gpus.empty() || !node->nics.empty();
}

TEST(TopoCli, ThisMachineWithoutGpuOrRdmaSaysSo) {
  if (host_has_gpu_or_rdma()) GTEST_SKIP() << "this host has a GPU or an RDMA device";
  auto text = run_subprocess({FABRIC_PROBE_BINARY, "topo"});
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(text->exit_status, 0) << text->stderr_text;
  EXPECT_EQ(text->stdout_text, std::string(kNoGpuNoNic) + "\n");
  auto json = run_subprocess({FABRIC_PROBE_BINARY, "topo", "--json"});
  ASSERT_TRUE(json.ok()) << json.error().message();
  EXPECT_EQ(json->exit_status, 0) << json->stderr_text;
  auto doc = parse(json->stdout_text);
  EXPECT_EQ(doc["gpus"].Size(), 0u);
  EXPECT_EQ(doc["nics"].Size(), 0u);
  EXPECT_STREQ(doc["message"].GetString(), kNoGpuNoNic);
  // The runtime was asked and said why it has nothing (not installed, or no device).
  EXPECT_TRUE(doc["cuda"]["asked"].GetBool());
  EXPECT_TRUE(doc["cuda"]["status"].IsString());
  EXPECT_TRUE(doc["cuda"]["devices"].IsNull());
}

TEST(TopoCli, ReadsTheRealSysfsWithoutError) {
  // Whatever this machine has, its own sysfs reads cleanly (the PCI functions there are
  // walked for GPUs).
  auto node = topo::read_node_topology({});
  ASSERT_TRUE(node.ok()) << node.error().message();
  for (const auto& g : node->gpus) {
    ASSERT_TRUE(g.pci.has_value());
    EXPECT_FALSE(g.pci->host_bridge.empty());
  }
}

} // namespace
} // namespace fabric::probes
