// gpu tier: runs where a CUDA device is present, skips elsewhere.
#include <gtest/gtest.h>

#include "common/cuda_runtime.h"

namespace fabric {
namespace {

class CudaDevice : public ::testing::Test {
protected:
  void SetUp() override {
    auto count = cuda::device_count();
    if (!count.ok()) GTEST_SKIP() << count.error().message();
    count_ = *count;
  }
  int count_ = 0;
};

TEST_F(CudaDevice, EveryDeviceHasAPciAddressAndMemoryAndCanAllocate) {
  ASSERT_GE(count_, 1);
  for (int i = 0; i < count_; ++i) {
    auto d = cuda::describe_device(i);
    ASSERT_TRUE(d.ok()) << d.error().message();
    // "0000:3b:00.0": the address that pairs a GPU with its NIC for GPUDirect.
    EXPECT_EQ(d->pci_bus_id.size(), 12u) << d->pci_bus_id;
    EXPECT_GT(d->total_memory, 1ull << 30);
    auto alloc = cuda::check_allocation(i, 64 << 20);
    EXPECT_TRUE(alloc.ok()) << alloc.error().message();
  }
  auto beyond = cuda::describe_device(count_);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.error().code(), ErrorCode::kNotFound);
}

} // namespace
} // namespace fabric
