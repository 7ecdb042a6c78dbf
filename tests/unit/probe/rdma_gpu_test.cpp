// --gpu without what GPUDirect RDMA needs: which piece is missing, and exit 4.
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "common/cuda_runtime.h"
#include "probes/rdma/gpu_buffer.h"

namespace fabric::probes {
namespace {

TEST(RdmaGpu, RegistrationPrefersDmaBuf) {
  GpuDirectSupport s;
  s.driver_dmabuf = true;
  s.peermem_loaded = true;
  EXPECT_EQ(*choose_gpu_registration(s, 0), GpuRegistration::kDmaBuf);
  s.driver_dmabuf = false;
  EXPECT_EQ(*choose_gpu_registration(s, 0), GpuRegistration::kPeerMemory);
  s.driver_dmabuf = true;
  s.verbs_dmabuf = false;
  EXPECT_EQ(*choose_gpu_registration(s, 0), GpuRegistration::kPeerMemory);
}

TEST(RdmaGpu, NeitherPathSaysWhatIsMissing) {
  GpuDirectSupport s;
  s.driver_dmabuf = false;
  s.peermem_loaded = false;
  auto r = choose_gpu_registration(s, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(exit_status_for(r.error().code()), kExitUnsupported);
  const std::string m = r.error().message();
  EXPECT_NE(m.find("does not export GPU 2 memory as dma-buf"), std::string::npos) << m;
  EXPECT_NE(m.find("nvidia-peermem module is not loaded"), std::string::npos) << m;
  EXPECT_NE(r.error().hint().find("modprobe nvidia-peermem"), std::string::npos);

  s.driver_dmabuf = true;
  s.verbs_dmabuf = false;
  auto old_verbs = choose_gpu_registration(s, 0);
  ASSERT_FALSE(old_verbs.ok());
  EXPECT_NE(old_verbs.error().message().find("ibv_reg_dmabuf_mr"), std::string::npos);
}

TEST(RdmaGpu, PeerMemoryModuleIsSeenInSysfs) {
  auto root =
      std::filesystem::temp_directory_path() / ("rdma-gpu-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(root / "module" / "nvidia");
  EXPECT_FALSE(nvidia_peermem_loaded(SysfsReader(root.string())));
  std::filesystem::create_directories(root / "module" / "nvidia_peermem");
  EXPECT_TRUE(nvidia_peermem_loaded(SysfsReader(root.string())));
  std::filesystem::remove_all(root);
}

// On a host without a GPU (or without the CUDA runtime) the allocation fails clearly.
TEST(RdmaGpu, AllocationWithoutAGpuExitsFour) {
  if (cuda::device_count().ok()) GTEST_SKIP() << "this host has a CUDA device";
  auto b = GpuBuffer::allocate(0, 1 << 20);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(exit_status_for(b.error().code()), kExitUnsupported) << b.error().message();
  const std::string m = b.error().message();
  EXPECT_TRUE(m.find("no CUDA device") != std::string::npos ||
              m.find("no CUDA runtime") != std::string::npos)
      << m;
  EXPECT_NE(m.find("--gpu 0"), std::string::npos) << m;
}

} // namespace
} // namespace fabric::probes
