#include <gtest/gtest.h>

#include "common/cuda_runtime.h"

namespace fabric {
namespace {

// Without a GPU the answer must be a clear error, never a crash or a loader failure.
TEST(CudaRuntime, AbsentGpuIsAClearError) {
  auto count = cuda::device_count();
  if (count.ok()) GTEST_SKIP() << "this host has " << *count << " CUDA device(s)";
  const Error& e = count.error();
  if (e.code() == ErrorCode::kUnsupported) {
    EXPECT_NE(e.message().find("no CUDA device"), std::string::npos) << e.message();
  } else {
    EXPECT_EQ(e.code(), ErrorCode::kNotBuilt) << e.message();
    EXPECT_NE(e.message().find("libcudart"), std::string::npos) << e.message();
  }
  EXPECT_FALSE(cuda::check_allocation(0, 1 << 20).ok());
  // The bus-id listing fails the same way, so callers can tell "no GPU" from a fault.
  auto ids = cuda::pci_bus_ids();
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().code(), e.code()) << ids.error().message();
}

} // namespace
} // namespace fabric
