// Which GPUs a job uses, from NVIDIA_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, the driver's
// list in a container, and the CUDA runtime: the rules CUDA and the NVIDIA container
// toolkit document, entry by entry.
#include <gtest/gtest.h>

#include "libs/topology/gpu_visibility.h"

namespace fabric::topo {
namespace {

// Four GPUs in PCI order, with UUIDs as the driver gives them.
std::vector<GpuIdentity> node() {
  std::vector<GpuIdentity> gpus;
  for (uint32_t i = 0; i < 4; ++i) {
    gpus.push_back(
        {PciAddress{0, 0x10 + i * 0x10, 0, 0},
         "GPU-" + std::to_string(i) + "aaaaaaa-0000-4000-8000-00000000000" + std::to_string(i)});
  }
  return gpus;
}

using Indexes = std::vector<std::size_t>;

VisibleGpus with(std::optional<std::string> nvidia, std::optional<std::string> cuda) {
  VisibilityInputs in;
  in.nvidia_visible_devices = std::move(nvidia);
  in.cuda_visible_devices = std::move(cuda);
  return visible_gpus(node(), in);
}

TEST(GpuVisibility, WithoutVariablesEveryGpu) {
  auto v = with(std::nullopt, std::nullopt);
  EXPECT_EQ(v.gpus, (Indexes{0, 1, 2, 3}));
  EXPECT_EQ(v.source, "every GPU");
  EXPECT_TRUE(v.notes.empty());
}

TEST(GpuVisibility, CudaVisibleDevicesOrdersAndStopsAtTheFirstBadEntry) {
  auto v = with(std::nullopt, "2,0");
  EXPECT_EQ(v.gpus, (Indexes{2, 0}));
  EXPECT_EQ(v.source, "CUDA_VISIBLE_DEVICES=2,0");
  // CUDA's own example: 0,2,-1,1 makes devices 0 and 2 visible and 1 invisible.
  v = with(std::nullopt, "0,2,-1,1");
  EXPECT_EQ(v.gpus, (Indexes{0, 2}));
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("'-1'"), std::string::npos) << v.notes[0];
  EXPECT_NE(v.notes[0].find("every entry after it"), std::string::npos) << v.notes[0];
  v = with(std::nullopt, "1,7");
  EXPECT_EQ(v.gpus, (Indexes{1}));
  EXPECT_NE(v.notes.at(0).find("sees 4 GPU(s)"), std::string::npos) << v.notes[0];
  v = with(std::nullopt, "1, 1");
  EXPECT_EQ(v.gpus, (Indexes{1}));
  EXPECT_NE(v.notes.at(0).find("second time"), std::string::npos) << v.notes[0];
  EXPECT_TRUE(with(std::nullopt, "").gpus.empty());
}

TEST(GpuVisibility, CudaVisibleDevicesTakesUuidPrefixes) {
  auto v = with(std::nullopt, "GPU-3aaaaaaa,GPU-1aaaaaaa-0000-4000-8000-000000000001");
  EXPECT_EQ(v.gpus, (Indexes{3, 1}));
  // "GPU-" alone matches all four: ambiguous, so it names no GPU.
  v = with(std::nullopt, "GPU-");
  EXPECT_TRUE(v.gpus.empty());
  EXPECT_NE(v.notes.at(0).find("no single visible GPU"), std::string::npos) << v.notes[0];
  v = with(std::nullopt, "MIG-0b7d0b6c-6d25-5b6b-a7e6-bd3b0e08c3f5");
  EXPECT_TRUE(v.gpus.empty());
  EXPECT_NE(v.notes.at(0).find("--gpu"), std::string::npos) << v.notes[0];
}

TEST(GpuVisibility, NvidiaVisibleDevicesChoosesTheContainersGpus) {
  EXPECT_EQ(with("all", std::nullopt).gpus, (Indexes{0, 1, 2, 3}));
  EXPECT_TRUE(with("none", std::nullopt).gpus.empty());
  EXPECT_TRUE(with("void", std::nullopt).gpus.empty());
  // Host indexes and UUIDs; the container sees them in PCI order.
  auto v = with("3,GPU-1aaaaaaa-0000-4000-8000-000000000001", std::nullopt);
  EXPECT_EQ(v.gpus, (Indexes{1, 3}));
  EXPECT_EQ(v.source, "NVIDIA_VISIBLE_DEVICES=3,GPU-1aaaaaaa-0000-4000-8000-000000000001");
  // MIG devices name their GPU.
  EXPECT_EQ(with("2:0,MIG-GPU-1aaaaaaa-0000-4000-8000-000000000001/1/0", std::nullopt).gpus,
            (Indexes{1, 2}));
  v = with("9,bogus", std::nullopt);
  EXPECT_TRUE(v.gpus.empty());
  ASSERT_EQ(v.notes.size(), 2u);
  EXPECT_NE(v.notes[0].find("has 4 GPU(s)"), std::string::npos) << v.notes[0];
}

TEST(GpuVisibility, CudaIndexesCountWithinTheContainersGpus) {
  auto v = with("1,3", "1");
  EXPECT_EQ(v.gpus, (Indexes{3}));
  EXPECT_EQ(v.source, "NVIDIA_VISIBLE_DEVICES=1,3, then CUDA_VISIBLE_DEVICES=1");
  // A UUID outside the container's GPUs is not visible to CUDA inside it.
  v = with("1,3", "GPU-0aaaaaaa");
  EXPECT_TRUE(v.gpus.empty());
}

TEST(GpuVisibility, DevicePluginVolumeMountsAndTheDriversList) {
  VisibilityInputs in;
  in.nvidia_visible_devices = "/var/run/nvidia-container-devices";
  in.nvidia_device_files = {"GPU-2aaaaaaa-0000-4000-8000-000000000002"};
  EXPECT_EQ(visible_gpus(node(), in).gpus, (Indexes{2}));

  // No variable, but the driver shows two of the four GPUs: a container's view.
  VisibilityInputs container;
  container.driver_gpus = std::vector<PciAddress>{node()[3].address, node()[1].address};
  auto v = visible_gpus(node(), container);
  EXPECT_EQ(v.gpus, (Indexes{1, 3}));
  EXPECT_EQ(v.source, "the container's GPUs (/proc/driver/nvidia/gpus)");
  // On the host the driver lists them all: nothing to narrow.
  container.driver_gpus = std::vector<PciAddress>{};
  for (const auto& g : node())
    container.driver_gpus->push_back(g.address);
  EXPECT_EQ(visible_gpus(node(), container).source, "every GPU");
}

TEST(GpuVisibility, TheCudaRuntimeHasTheLastWord) {
  VisibilityInputs in;
  in.cuda_visible_devices = "0"; // already applied by the runtime
  in.cuda_devices = std::vector<PciAddress>{node()[2].address, PciAddress{0, 0xee, 0, 0}};
  auto v = visible_gpus(node(), in);
  EXPECT_EQ(v.gpus, (Indexes{2}));
  EXPECT_EQ(v.source, "the CUDA runtime's devices");
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("0000:ee:00.0"), std::string::npos) << v.notes[0];
}

TEST(GpuVisibility, HostileValuesAreBounded) {
  std::string many;
  for (int i = 0; i < 1000; ++i)
    many += "0,";
  auto v = with(many, std::nullopt);
  EXPECT_EQ(v.gpus, (Indexes{0}));
  EXPECT_FALSE(v.notes.empty());
  EXPECT_NE(v.notes[0].find("more than 256"), std::string::npos) << v.notes[0];
  v = with(std::nullopt, std::string(100000, '9'));
  EXPECT_TRUE(v.gpus.empty());
  EXPECT_LT(v.notes.at(0).size(), 400u);
}

} // namespace
} // namespace fabric::topo
