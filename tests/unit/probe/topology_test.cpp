// GPU/NIC topology from sysfs: PCI addresses, the distance rules, and whole nodes read from
// the fixtures of tests/data/probe/topo (make_fixtures.sh) checked against the matrices
// `nvidia-smi topo -m` printed on servers of those layouts, as their users posted them:
//
//   dgx-a100    a DGX A100 (github.com/rapidsai/ucx-py/issues/749; NUMA and CPU affinity
//               from github.com/rapidsai/dask-cuda/issues/1358, same model)
//   hgx-h800    an 8x H800 HGX (github.com/NVIDIA/nccl/issues/933, also posted as
//               github.com/pytorch/pytorch/issues/106190)
//   two-socket  a two-socket PCIe server, 8 GPUs and one NIC on socket 0
//               (github.com/kubernetes/kubernetes/issues/53497)
//
// The tables below are those outputs, cut where the posts cut them (rows that follow by
// symmetry are marked). NV# entries (NVLink) are kept as printed and skipped: sysfs does
// not show NVLink, so topo reports the PCIe path of a GPU pair instead.
#include <sstream>

#include <gtest/gtest.h>

#include "common/sysfs.h"
#include "libs/topology/node_topology.h"
#include "libs/topology/pci_topology.h"

namespace fabric::topo {
namespace {

const std::string kTopo = FABRIC_TEST_DATA_DIR "/probe/topo/";

NodeTopology read_fixture(const std::string& name) {
  TopologySources sources;
  sources.root = kTopo + name;
  auto node = read_node_topology(sources);
  EXPECT_TRUE(node.ok()) << node.error().message();
  return node.ok() ? std::move(*node) : NodeTopology{};
}

PciAddress addr(const char* text) {
  auto a = parse_pci_address(text);
  EXPECT_TRUE(a.ok()) << a.error().message();
  return a.ok() ? *a : PciAddress{};
}

// The PCI function of a GPU (GPU3) or NIC (by its RDMA name) of `node`.
const std::optional<PciFunction>* endpoint(const NodeTopology& node, const std::string& name) {
  for (const auto& g : node.gpus) {
    if (g.name == name) return &g.pci;
  }
  for (const auto& n : node.nics) {
    if (n.rdma_device == name || n.name == name) return &n.pci;
  }
  return nullptr;
}

// Compares `node` with a published `nvidia-smi topo -m` table: a header of device names
// (up to "CPU Affinity"), then one row per device: its cells, and for GPUs the CPU and
// NUMA affinity.
void expect_matrix(const NodeTopology& node, const std::string& published) {
  std::istringstream lines(published);
  std::string line;
  std::getline(lines, line);
  std::vector<std::string> columns;
  {
    std::istringstream header(line);
    std::string name;
    while (header >> name && name != "CPU")
      columns.push_back(name);
  }
  int checked = 0;
  while (std::getline(lines, line)) {
    std::istringstream row(line);
    std::string name;
    if (!(row >> name)) continue;
    const auto* a = endpoint(node, name);
    ASSERT_NE(a, nullptr) << "no " << name << " on the node";
    for (const auto& column : columns) {
      std::string want;
      ASSERT_TRUE(row >> want) << name << ": row too short at " << column;
      const auto* b = endpoint(node, column);
      ASSERT_NE(b, nullptr) << "no " << column << " on the node";
      auto got = distance(*a, *b);
      ASSERT_TRUE(got.has_value()) << name << "/" << column;
      if (want.starts_with("NV")) {
        // NVLink: topo shows the PCIe path, never X.
        EXPECT_NE(*got, PciDistance::kSelf) << name << "/" << column;
        continue;
      }
      EXPECT_EQ(distance_name(*got), want) << name << " to " << column;
      ++checked;
    }
    std::string cpus, numa;
    if (row >> cpus) {
      EXPECT_EQ((*a)->local_cpulist, cpus) << name;
      if (row >> numa) {
        EXPECT_EQ(std::to_string((*a)->numa_node), numa) << name;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// --- addresses --------------------------------------------------------------------------

TEST(PciAddress, ParsesTheFormsToolsPrint) {
  EXPECT_EQ(to_string(addr("0000:3b:00.0")), "0000:3b:00.0");
  EXPECT_EQ(to_string(addr("00000000:3B:00.1")), "0000:3b:00.1"); // nvidia-smi, CUDA
  EXPECT_EQ(to_string(addr("3b:1f.7")), "0000:3b:1f.7");          // lspci
  EXPECT_EQ(to_string(addr("10000:01:00.0")), "10000:01:00.0");   // a VMD domain
  EXPECT_LT(addr("0000:07:00.0"), addr("0000:0c:00.0"));
}

TEST(PciAddress, RejectsWhatIsNotOne) {
  for (const char* bad : {"", "0000:3b:00", "0000:3b:20.0", "0000:3b:00.8", "0000:3bb:00.0",
                          "zz:00.0", "0000:3b:00.0 ", "1:2:3:4.0", "000000000:3b:00.0"}) {
    auto a = parse_pci_address(bad);
    EXPECT_FALSE(a.ok()) << "'" << bad << "'";
    if (!a.ok()) {
      EXPECT_EQ(a.error().code(), ErrorCode::kInvalidArgument);
    }
  }
}

// --- the rules, on hand-made hierarchies ------------------------------------------------

PciFunction at(const char* host_bridge, std::vector<const char*> chain, int numa = 0) {
  PciFunction f;
  f.host_bridge = host_bridge;
  for (const char* a : chain)
    f.chain.push_back(addr(a));
  f.address = f.chain.back();
  f.numa_node = numa;
  return f;
}

TEST(PciDistanceRules, FollowNvidiaSmisLegend) {
  // Root port 00:01.0 -> switch 01:00.0 -> downstream ports 02:08.0, 02:10.0.
  auto gpu = at("pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:08.0", "0000:03:00.0"});
  auto nic = at("pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:10.0", "0000:04:00.0"});
  EXPECT_EQ(classify(gpu, gpu), PciDistance::kSelf);
  EXPECT_EQ(classify(gpu, nic), PciDistance::kPix);
  EXPECT_EQ(classify(nic, gpu), PciDistance::kPix);

  // The two ports of a dual-port NIC, below one root port.
  auto port0 = at("pci0000:40", {"0000:40:01.1", "0000:41:00.0"});
  auto port1 = at("pci0000:40", {"0000:40:01.1", "0000:41:00.1"});
  EXPECT_EQ(classify(port0, port1), PciDistance::kPix);

  // Nested switches: below the same top switch through two leaf switches, or one leaf and
  // a port of the top switch.
  auto leaf_a = at("pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:05:00.0",
                                  "0000:06:00.0", "0000:07:00.0"});
  auto leaf_b = at("pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:04.0", "0000:0a:00.0",
                                  "0000:0b:00.0", "0000:0c:00.0"});
  auto top = at("pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:0c.0", "0000:10:00.0"});
  EXPECT_EQ(classify(leaf_a, leaf_b), PciDistance::kPxb);
  EXPECT_EQ(classify(leaf_a, top), PciDistance::kPxb);

  // Below different root ports of one host bridge, or on the root bus itself.
  auto other_port = at("pci0000:00", {"0000:00:03.0", "0000:20:00.0"});
  auto on_root_bus = at("pci0000:00", {"0000:00:04.0"});
  EXPECT_EQ(classify(gpu, other_port), PciDistance::kPhb);
  EXPECT_EQ(classify(on_root_bus, other_port), PciDistance::kPhb);

  // Under another host bridge: same NUMA node or not.
  auto same_node = at("pci0000:17", {"0000:17:01.0", "0000:18:00.0"}, 0);
  auto other_node = at("pci0000:80", {"0000:80:01.0", "0000:81:00.0"}, 1);
  EXPECT_EQ(classify(gpu, same_node), PciDistance::kNode);
  EXPECT_EQ(classify(gpu, other_node), PciDistance::kSys);
  // Without NUMA information (-1 on both sides) the node cannot be told apart: NODE.
  gpu.numa_node = -1;
  same_node.numa_node = -1;
  EXPECT_EQ(classify(gpu, same_node), PciDistance::kNode);
}

TEST(PciDistanceRules, NamesAndLegendAreNvidiaSmis) {
  EXPECT_EQ(distance_name(PciDistance::kSelf), "X");
  EXPECT_EQ(distance_name(PciDistance::kPix), "PIX");
  EXPECT_EQ(distance_name(PciDistance::kPxb), "PXB");
  EXPECT_EQ(distance_name(PciDistance::kPhb), "PHB");
  EXPECT_EQ(distance_name(PciDistance::kNode), "NODE");
  EXPECT_EQ(distance_name(PciDistance::kSys), "SYS");
  EXPECT_EQ(distance_meaning(PciDistance::kPix),
            "Connection traversing at most a single PCIe bridge");
  EXPECT_EQ(distance_meaning(PciDistance::kNode),
            "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
            "within a NUMA node");
  EXPECT_LT(PciDistance::kPxb, PciDistance::kPhb); // ordered nearest first
}

// --- sysfs --------------------------------------------------------------------------------

TEST(PciSysfs, ReadsAFunctionsPlaceAndAttributes) {
  SysfsReader sys(kTopo + "dgx-a100/sys");
  auto gpu = read_pci_function(sys, addr("0000:07:00.0"));
  ASSERT_TRUE(gpu.ok()) << gpu.error().message();
  EXPECT_EQ(gpu->host_bridge, "pci0000:00");
  ASSERT_EQ(gpu->chain.size(), 6u);
  EXPECT_EQ(to_string(gpu->chain.front()), "0000:00:01.1");
  EXPECT_EQ(gpu->numa_node, 3);
  EXPECT_EQ(gpu->local_cpulist, "48-63,176-191");
  EXPECT_EQ(gpu->class_code, 0x030200u);
  EXPECT_EQ(gpu->vendor, 0x10deu);
  EXPECT_EQ(gpu->device, 0x20b0u);
  EXPECT_EQ(gpu->driver, "nvidia");

  auto missing = read_pci_function(sys, addr("0000:99:00.0"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST(PciSysfs, NetdevsAndRdmaDevicesLeadToTheirFunction) {
  SysfsReader sys(kTopo + "cpu-node/sys");
  // Through the virtio device between the PCI function and the netdev.
  auto eth0 = pci_function_of(sys, "class/net/eth0");
  ASSERT_TRUE(eth0.ok()) << eth0.error().message();
  ASSERT_TRUE(eth0->has_value());
  EXPECT_EQ(to_string(**eth0), "0000:00:03.0");
  EXPECT_EQ(to_string(**rdma_device_pci(sys, "mlx5_1")), "0000:41:00.1");
  // rxe has no parent device.
  auto rxe = rdma_device_pci(sys, "rxe0");
  ASSERT_TRUE(rxe.ok()) << rxe.error().message();
  EXPECT_FALSE(rxe->has_value());
  EXPECT_EQ(rdma_device_pci(sys, "mlx5_9").error().code(), ErrorCode::kNotFound);
}

TEST(PciSysfs, DistanceByAddressesAndGpuToRdmaDevice) {
  SysfsReader sys(kTopo + "hgx-h800/sys");
  auto d = pci_distance(sys, "0000:18:00.0", "00000000:9A:00.0");
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(*d, PciDistance::kSys);
  EXPECT_EQ(*gpu_nic_distance(sys, "00000000:18:00.0", "mlx5_2"), PciDistance::kPix);
  EXPECT_EQ(*gpu_nic_distance(sys, "0000:18:00.0", "mlx5_4"), PciDistance::kNode);
  auto soft = gpu_nic_distance(SysfsReader(kTopo + "cpu-node/sys"), "0000:41:00.0", "rxe0");
  ASSERT_FALSE(soft.ok());
  EXPECT_EQ(soft.error().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(gpu_nic_distance(sys, "not-an-address", "mlx5_2").ok());
}

// --- whole nodes against the published matrices ---------------------------------------

TEST(NodeTopology, DgxA100MatchesNvidiaSmi) {
  auto node = read_fixture("dgx-a100");
  ASSERT_EQ(node.gpus.size(), 8u);
  ASSERT_EQ(node.nics.size(), 12u);
  // ucx-py#749 (its affinity columns were those of a restricted cgroup: left out here).
  expect_matrix(
      node,
      R"(GPU0 GPU1 GPU2 GPU3 GPU4 GPU5 GPU6 GPU7 mlx5_0 mlx5_1 mlx5_2 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_7 mlx5_8 mlx5_9 mlx5_10 mlx5_11
GPU0   X  PXB SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS
GPU1 PXB    X SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS
GPU2 SYS  SYS   X PXB SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS
GPU3 SYS  SYS PXB   X SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS
GPU4 SYS  SYS SYS SYS   X PXB SYS SYS SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS
GPU5 SYS  SYS SYS SYS PXB   X SYS SYS SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS
GPU6 SYS  SYS SYS SYS SYS SYS   X PXB SYS SYS SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS
GPU7 SYS  SYS SYS SYS SYS SYS PXB   X SYS SYS SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS
mlx5_0 PXB PXB SYS SYS SYS SYS SYS SYS X PXB SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS
)");
  // dask-cuda#1358 (bare metal): GPU0 and GPU1 with NV12, their NICs PXB, NUMA node 3.
  expect_matrix(node, R"(GPU0 GPU1 mlx5_0 mlx5_1 mlx5_2 CPU Affinity NUMA Affinity
GPU0    X NV12 PXB PXB SYS 48-63,176-191 3
GPU1 NV12    X PXB PXB SYS 48-63,176-191 3
mlx5_0 PXB PXB X PXB SYS
mlx5_2 SYS SYS SYS SYS X
)");
  // The storage NICs: two ports of one ConnectX-6 Dx each.
  EXPECT_EQ(*distance(*endpoint(node, "mlx5_4"), *endpoint(node, "mlx5_5")), PciDistance::kPix);
  EXPECT_EQ(*distance(*endpoint(node, "mlx5_10"), *endpoint(node, "mlx5_11")), PciDistance::kPix);
  // NICs are numbered by name, mlx5_10 after mlx5_9.
  EXPECT_EQ(node.nics[10].rdma_device, "mlx5_10");
  EXPECT_EQ(node.nics[10].name, "NIC10");
}

TEST(NodeTopology, HgxH800MatchesNvidiaSmi) {
  auto node = read_fixture("hgx-h800");
  ASSERT_EQ(node.gpus.size(), 8u);
  ASSERT_EQ(node.nics.size(), 9u);
  // nccl#933. The post cuts GPU7's row and the NIC rows; GPU7's row follows GPU4-6's
  // pattern, the NIC rows are the NIC columns transposed.
  expect_matrix(
      node,
      R"(GPU0 GPU1 GPU2 GPU3 GPU4 GPU5 GPU6 GPU7 NIC0 NIC1 NIC2 NIC3 NIC4 NIC5 NIC6 NIC7 NIC8 CPU Affinity NUMA Affinity
GPU0  X   NV8 NV8 NV8 NV8 NV8 NV8 NV8 NODE SYS PIX SYS NODE SYS NODE SYS NODE 0-47,96-143 0
GPU1 NV8   X  NV8 NV8 NV8 NV8 NV8 NV8 NODE SYS NODE SYS PIX SYS NODE SYS NODE 0-47,96-143 0
GPU2 NV8  NV8  X  NV8 NV8 NV8 NV8 NV8 NODE SYS NODE SYS NODE SYS PIX SYS NODE 0-47,96-143 0
GPU3 NV8  NV8 NV8  X  NV8 NV8 NV8 NV8 NODE SYS NODE SYS NODE SYS NODE SYS PIX 0-47,96-143 0
GPU4 NV8  NV8 NV8 NV8  X  NV8 NV8 NV8 SYS PIX SYS NODE SYS NODE SYS NODE SYS 48-95,144-191 1
GPU5 NV8  NV8 NV8 NV8 NV8  X  NV8 NV8 SYS NODE SYS PIX SYS NODE SYS NODE SYS 48-95,144-191 1
GPU6 NV8  NV8 NV8 NV8 NV8 NV8  X  NV8 SYS NODE SYS NODE SYS PIX SYS NODE SYS 48-95,144-191 1
GPU7 NV8  NV8 NV8 NV8 NV8 NV8 NV8  X  SYS NODE SYS NODE SYS NODE SYS PIX SYS 48-95,144-191 1
)");
  // Without NVLink in sysfs, GPU pairs show their PCIe path: NODE within a socket, SYS
  // across (as nvidia-smi prints them on HGX boards without NVLink, deepseek-ai/DeepEP#60).
  expect_matrix(node, R"(GPU0 GPU1 GPU4 NIC0 NIC2 CPU
GPU0 X NODE SYS NODE PIX
GPU4 SYS SYS X SYS SYS
NIC0 NODE NODE SYS X NODE
)");
  ASSERT_TRUE(node.nics[2].pci.has_value());
  EXPECT_EQ(node.nics[2].rdma_device, "mlx5_2");
  EXPECT_EQ(to_string(node.nics[2].pci->address), "0000:19:00.0");
}

TEST(NodeTopology, TwoSocketServerMatchesNvidiaSmi) {
  auto node = read_fixture("two-socket");
  ASSERT_EQ(node.gpus.size(), 8u);
  ASSERT_EQ(node.nics.size(), 1u);
  // kubernetes#53497: GPU0-GPU4 as posted; GPU5-GPU7 and mlx4_0 are the rows that follow
  // by symmetry (the post cut them).
  expect_matrix(node, R"(GPU0 GPU1 GPU2 GPU3 GPU4 GPU5 GPU6 GPU7 mlx4_0 CPU Affinity
GPU0     X  PIX  PHB  PHB  SYS  SYS  SYS  SYS  PHB 0-9,20-29
GPU1   PIX    X  PHB  PHB  SYS  SYS  SYS  SYS  PHB 0-9,20-29
GPU2   PHB  PHB    X  PIX  SYS  SYS  SYS  SYS  PHB 0-9,20-29
GPU3   PHB  PHB  PIX    X  SYS  SYS  SYS  SYS  PHB 0-9,20-29
GPU4   SYS  SYS  SYS  SYS    X  PIX  PHB  PHB  SYS 10-19,30-39
GPU5   SYS  SYS  SYS  SYS  PIX    X  PHB  PHB  SYS 10-19,30-39
GPU6   SYS  SYS  SYS  SYS  PHB  PHB    X  PIX  SYS 10-19,30-39
GPU7   SYS  SYS  SYS  SYS  PHB  PHB  PIX    X  SYS 10-19,30-39
mlx4_0 PHB  PHB  PHB  PHB  SYS  SYS  SYS  SYS    X
)");
}

TEST(NodeTopology, GpusAndNicsCarryWhatTheDriverAndRdmaSysfsSay) {
  auto node = read_fixture("dgx-a100");
  const Gpu& gpu = node.gpus[0];
  EXPECT_EQ(gpu.name, "GPU0");
  EXPECT_EQ(to_string(gpu.address), "0000:07:00.0");
  EXPECT_EQ(gpu.model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(gpu.uuid, "GPU-a100a100-0000-4000-8000-000000000000");
  EXPECT_FALSE(gpu.cuda_index.has_value());
  EXPECT_FALSE(node.cuda.asked);

  const RdmaNic& nic = node.nics[0];
  EXPECT_EQ(nic.rdma_device, "mlx5_0");
  ASSERT_TRUE(nic.pci.has_value());
  EXPECT_EQ(nic.pci->driver, "mlx5_core");
  EXPECT_EQ(nic.netdevs, std::vector<std::string>{"enp12s0np0"});
  ASSERT_EQ(nic.ports.size(), 1u);
  EXPECT_EQ(nic.ports[0].state, "ACTIVE");
  EXPECT_EQ(nic.ports[0].link_layer, "Ethernet");
  ASSERT_EQ(nic.ports[0].roce_v2_gids.size(), 2u); // link-local and the address, v2 only
  EXPECT_EQ(nic.ports[0].roce_v2_gids[1].index, 3u);
  EXPECT_EQ(nic.ports[0].roce_v2_gids[1].gid, "::ffff:10.10.0.1");
}

TEST(NodeTopology, ClosestNicsPerGpu) {
  auto dgx = read_fixture("dgx-a100");
  auto closest = closest_nics(dgx, 4);
  ASSERT_TRUE(closest.has_value());
  EXPECT_EQ(closest->distance, PciDistance::kPxb);
  ASSERT_EQ(closest->nics.size(), 2u);
  EXPECT_EQ(dgx.nics[closest->nics[0]].rdma_device, "mlx5_6");
  EXPECT_EQ(dgx.nics[closest->nics[1]].rdma_device, "mlx5_7");
  // Restricted to the storage NICs, GPU4 finds them across the sockets.
  auto storage = closest_nics(dgx, 4, {4, 5});
  ASSERT_TRUE(storage.has_value());
  EXPECT_EQ(storage->distance, PciDistance::kSys);

  auto two = read_fixture("two-socket");
  EXPECT_EQ(closest_nics(two, 0)->distance, PciDistance::kPhb);
  EXPECT_EQ(closest_nics(two, 7)->distance, PciDistance::kSys);
}

TEST(NodeTopology, NodeWithoutGpuListsItsNicsAndSoftRoce) {
  auto node = read_fixture("cpu-node");
  EXPECT_TRUE(node.gpus.empty());
  ASSERT_EQ(node.nics.size(), 3u);
  EXPECT_EQ(node.nics[0].rdma_device, "mlx5_0");
  EXPECT_EQ(node.nics[2].rdma_device, "rxe0");
  EXPECT_FALSE(node.nics[2].pci.has_value());
  // rxe0's own netdev comes from its GID table.
  EXPECT_EQ(node.nics[2].netdevs, std::vector<std::string>{"eth0"});
  EXPECT_EQ(*distance(node.nics[0].pci, node.nics[1].pci), PciDistance::kPix);
  EXPECT_FALSE(distance(node.nics[0].pci, node.nics[2].pci).has_value());
  EXPECT_FALSE(node.gpudirect.nvidia_driver);
}

// --- GPUDirect RDMA -----------------------------------------------------------------------

TEST(GpuDirect, PeerMemoryModuleOnTheDgx) {
  auto node = read_fixture("dgx-a100");
  EXPECT_EQ(node.gpudirect.peer_memory, "nvidia_peermem");
  EXPECT_FALSE(node.gpudirect.kernel_dma_buf); // 5.4
  auto near = gpudirect_path(node, 0, 0);
  EXPECT_TRUE(near.available);
  EXPECT_EQ(near.via, "nvidia-peermem");
  EXPECT_TRUE(near.nccl_uses);
  auto far = gpudirect_path(node, 0, 2);
  EXPECT_TRUE(far.available);
  EXPECT_FALSE(far.nccl_uses);
  EXPECT_NE(far.reason.find("NCCL_NET_GDR_LEVEL"), std::string::npos) << far.reason;
}

TEST(GpuDirect, DmaBufWithTheOpenModuleOnARecentKernel) {
  auto node = read_fixture("hgx-h800");
  EXPECT_EQ(node.gpudirect.peer_memory, "");
  EXPECT_TRUE(node.gpudirect.kernel_dma_buf); // 5.15
  EXPECT_TRUE(node.gpudirect.nvidia_open_module);
  auto path = gpudirect_path(node, 0, 2);
  EXPECT_TRUE(path.available);
  EXPECT_EQ(path.via, "dma-buf");
  EXPECT_TRUE(path.nccl_uses);
}

TEST(GpuDirect, NeitherOnAnOldProprietaryNode) {
  auto node = read_fixture("two-socket");
  auto path = gpudirect_path(node, 0, 0);
  EXPECT_FALSE(path.available);
  EXPECT_NE(path.reason.find("load nvidia-peermem"), std::string::npos) << path.reason;
  EXPECT_NE(path.reason.find("4.4.0-93-generic predates 5.12"), std::string::npos) << path.reason;
  EXPECT_NE(path.reason.find("proprietary"), std::string::npos) << path.reason;
  EXPECT_NE(path.reason.find("mlx4_core is not known"), std::string::npos) << path.reason;
}

// --- the CUDA runtime's view --------------------------------------------------------------

TEST(NodeTopologyCuda, RuntimeDevicesAreMatchedByAddress) {
  TopologySources sources;
  sources.root = kTopo + "hgx-h800";
  // As with CUDA_VISIBLE_DEVICES=4,0: the runtime's device 0 is GPU4.
  sources.cuda_bus_ids = [] {
    return Result<std::vector<std::string>>(
        std::vector<std::string>{"00000000:9A:00.0", "00000000:18:00.0"});
  };
  auto node = read_node_topology(sources);
  ASSERT_TRUE(node.ok()) << node.error().message();
  EXPECT_TRUE(node->cuda.asked);
  EXPECT_EQ(node->cuda.status, "2 CUDA devices");
  EXPECT_EQ(node->gpus[4].cuda_index, 0);
  EXPECT_EQ(node->gpus[0].cuda_index, 1);
  EXPECT_FALSE(node->gpus[1].cuda_index.has_value());
  EXPECT_EQ(node->gpus.size(), 8u);
}

TEST(NodeTopologyCuda, ADeviceSysfsDoesNotShowIsAddedAndErrorsAreReported) {
  TopologySources sources;
  sources.root = kTopo + "cpu-node";
  sources.cuda_bus_ids = [] {
    return Result<std::vector<std::string>>(std::vector<std::string>{"0000:c1:00.0"});
  };
  auto node = read_node_topology(sources);
  ASSERT_TRUE(node.ok()) << node.error().message();
  ASSERT_EQ(node->gpus.size(), 1u);
  EXPECT_EQ(node->gpus[0].name, "GPU0");
  EXPECT_FALSE(node->gpus[0].pci.has_value());
  EXPECT_EQ(node->gpus[0].cuda_index, 0);

  sources.cuda_bus_ids = [] {
    return Result<std::vector<std::string>>(
        Error(ErrorCode::kUnsupported, "cudaGetDeviceCount", "no CUDA device"));
  };
  node = read_node_topology(sources);
  ASSERT_TRUE(node.ok()) << node.error().message();
  EXPECT_TRUE(node->gpus.empty());
  EXPECT_NE(node->cuda.status.find("no CUDA device"), std::string::npos) << node->cuda.status;
  EXPECT_FALSE(node->cuda.devices.has_value());
}

TEST(NaturalOrder, NumbersCompareByValue) {
  EXPECT_TRUE(natural_less("mlx5_2", "mlx5_10"));
  EXPECT_FALSE(natural_less("mlx5_10", "mlx5_2"));
  EXPECT_TRUE(natural_less("mlx5_9", "rxe0"));
  EXPECT_TRUE(natural_less("mlx5_bond_0", "mlx5_bond_1"));
  EXPECT_FALSE(natural_less("mlx5_1", "mlx5_1"));
  EXPECT_TRUE(natural_less("mlx5", "mlx5_0"));
}

} // namespace
} // namespace fabric::topo
