// gpu tier: --gpu's buffers on a real CUDA device, and their GPUDirect RDMA registration
// with the host's first RDMA device. Skips without a GPU (or without an RDMA device for
// the registration part).
#include <cstdint>
#include <iostream>

#include <gtest/gtest.h>

#include "common/cuda_runtime.h"
#include "common/verbs_handles.h"
#include "probes/rdma/gpu_buffer.h"

namespace fabric::probes {
namespace {

class RdmaGpuBuffer : public ::testing::Test {
protected:
  void SetUp() override {
    auto count = cuda::device_count();
    if (!count.ok()) GTEST_SKIP() << count.error().message();
  }
};

TEST_F(RdmaGpuBuffer, AllocatesAlignedDeviceMemory) {
  auto b = GpuBuffer::allocate(0, (4 << 20) + 100);
  ASSERT_TRUE(b.ok()) << b.error().message();
  // GPUDirect pins 64 KiB GPU pages: the buffer starts on one and covers whole ones.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % (64 * 1024), 0u);
  EXPECT_GE(b->size(), (4u << 20) + 100);
  EXPECT_EQ(b->size() % (64 * 1024), 0u);
  EXPECT_TRUE(b->fill(0x5a).ok());
  auto beyond = GpuBuffer::allocate(*cuda::device_count(), 4096);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.error().code(), ErrorCode::kNotFound);
}

TEST_F(RdmaGpuBuffer, RegistersWithTheRdmaDeviceOrSaysWhatIsMissing) {
  auto list = verbs::DeviceList::get();
  ASSERT_TRUE(list.ok()) << list.error().message();
  if (list->empty()) GTEST_SKIP() << "no RDMA device to register GPU memory with";
  auto ctx = verbs::open_device((*list)[0]);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message();
  auto pd = verbs::alloc_pd(ctx->get());
  ASSERT_TRUE(pd.ok()) << pd.error().message();
  auto b = GpuBuffer::allocate(0, 8 << 20);
  ASSERT_TRUE(b.ok()) << b.error().message();
  GpuRegistration used = GpuRegistration::kDmaBuf;
  auto mr = b->register_memory(
      pd->get(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, used);
  if (mr.ok()) {
    EXPECT_GE((*mr)->length, b->size());
    EXPECT_NE((*mr)->rkey, 0u);
    std::cout << "registered with " << gpu_registration_name(used) << "\n";
  } else {
    // Neither dma-buf nor nvidia-peermem: the documented exit-4 error.
    EXPECT_EQ(exit_status_for(mr.error().code()), kExitUnsupported) << mr.error().message();
    EXPECT_NE(mr.error().message().find("nvidia-peermem"), std::string::npos)
        << mr.error().message();
  }
}

} // namespace
} // namespace fabric::probes
