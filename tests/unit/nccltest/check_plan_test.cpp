// The device checks' host side: the launch plan covers every element exactly once in
// bounded launches, the embedded kernels are a fatbin when the build had nvcc, and a node
// without the CUDA driver is told why its checks run on the host.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "nccltest/check_plan.h"
#if FABRIC_TEST_HAVE_NCCL
#include "nccltest/check_kernels.h"
#endif

namespace fabric::nccltest {
namespace {

TEST(CheckPlan, CoversEveryElementOnceInBoundedLaunches) {
  for (uint64_t elements :
       {uint64_t{0}, uint64_t{1}, uint64_t{255}, uint64_t{257}, kDeviceLaunchElements,
        kDeviceLaunchElements * 2 + 3, uint64_t{8} << 30}) { // 8 Gi elements: 32 GiB of floats
    std::vector<CheckLaunch> plan = plan_check_launches(elements);
    uint64_t next = 0;
    for (const CheckLaunch& l : plan) {
      EXPECT_EQ(l.first, next);
      EXPECT_GT(l.count, 0u);
      EXPECT_LE(l.count, kDeviceLaunchElements);
      EXPECT_GE(l.blocks, 1u);
      EXPECT_LE(l.blocks, kMaxCheckBlocks);
      EXPECT_EQ(l.threads, kCheckThreads);
      // No idle block: every block has at least one element.
      EXPECT_LE(static_cast<uint64_t>(l.blocks - 1) * l.threads, l.count);
      next += l.count;
    }
    EXPECT_EQ(next, elements);
  }
  EXPECT_TRUE(plan_check_launches(0).empty());
  EXPECT_EQ(plan_check_launches(uint64_t{8} << 30).size(), 32u);
}

// The grid-stride loop of the kernels, run on the host over a small plan: each index is
// visited by exactly one thread.
TEST(CheckPlan, GridStrideLoopVisitsEachIndexOnce) {
  for (uint64_t elements : {uint64_t{1}, uint64_t{1000}, uint64_t{kMaxCheckBlocks} * 256 * 3 + 7}) {
    for (const CheckLaunch& l : plan_check_launches(elements)) {
      std::vector<uint8_t> seen(l.count, 0);
      const uint64_t stride = static_cast<uint64_t>(l.blocks) * l.threads;
      for (uint64_t thread = 0; thread < stride; ++thread) {
        for (uint64_t i = thread; i < l.count; i += stride)
          ++seen[i];
      }
      for (uint64_t i = 0; i < l.count; ++i)
        ASSERT_EQ(seen[i], 1) << "element " << i << " of " << elements;
    }
  }
}

TEST(CheckPlan, TheEmbeddedKernelsAreAFatbinWhenBuiltWithNvcc) {
  const std::span<const unsigned char> image = check_kernels_image();
#if FABRIC_TEST_HAVE_CHECK_KERNELS
  ASSERT_GT(image.size(), 16u);
  uint32_t magic = 0;
  std::memcpy(&magic, image.data(), sizeof magic);
  EXPECT_EQ(magic, 0xBA55ED50u); // the fatbin header's magic number
#else
  EXPECT_TRUE(image.empty());
#endif
}

#if FABRIC_TEST_HAVE_NCCL
TEST(CheckPlan, WithoutTheDriverTheKernelsSayWhyNot) {
  auto kernels = nccl::CheckKernels::load();
  if (kernels.ok()) GTEST_SKIP() << "this machine has a CUDA driver and a GPU";
#if FABRIC_TEST_HAVE_CHECK_KERNELS
  EXPECT_EQ(kernels.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(kernels.error().message().find("libcuda.so.1"), std::string::npos)
      << kernels.error().message();
#else
  EXPECT_EQ(kernels.error().code(), ErrorCode::kNotBuilt);
  EXPECT_NE(kernels.error().message().find("nvcc"), std::string::npos);
#endif
}
#endif

} // namespace
} // namespace fabric::nccltest
