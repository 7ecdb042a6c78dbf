// nccl-tests' -M 1 report: its amounts as getMemString writes them, its line as writeMemInfo
// prints it, where the footer puts it (after "Collective test concluded", before the last
// "#"), and the figures of several processes combined by their maximum.
#include "nccltest/memory_report.h"

#include <gtest/gtest.h>

#include "nccltest/text_report.h"

namespace fabric::nccltest {
namespace {

TEST(GpuMemoryReport, AmountsAreWrittenAsNcclTestsGetMemString) {
  EXPECT_EQ(memory_amount(0), "0.00 B");
  EXPECT_EQ(memory_amount(512), "512 B");
  EXPECT_EQ(memory_amount(1536), "1.50 KB");
  EXPECT_EQ(memory_amount(12 * 1024 * 1024 + 512 * 1024), "12.5 MB");
  EXPECT_EQ(memory_amount(std::int64_t{2} << 30), "2.00 GB");
  EXPECT_EQ(memory_amount(-3 * 1024 * 1024), "-3.00 MB");
}

TEST(GpuMemoryReport, TheLineFollowsTheConcludedLineAsInNcclTests) {
  RunFooter footer;
  footer.gpu_memory = GpuMemoryUsage{std::int64_t{1} << 30, 256 << 20, 2 << 20};
  const std::string text = render_text_footer(footer, "all_reduce_perf");
  EXPECT_NE(text.find("# Collective test concluded: all_reduce_perf\n"
                      "# GPU memory usage     : Initialization 1.00 GB | User-Allocated 256 MB | "
                      "Collective 2.00 MB | Total  1.25 GB\n"
                      "#\n"),
            std::string::npos)
      << text;
  footer.gpu_memory.reset();
  EXPECT_EQ(render_text_footer(footer, "all_reduce_perf").find("GPU memory usage"),
            std::string::npos);
}

TEST(GpuMemoryReport, ProcessesCombineByTheLargestOfEachFigure) {
  EXPECT_EQ(largest_drop({100, 200}, {40, 190}), 60);
  EXPECT_EQ(largest_drop({100}, {150}), -50) << "memory given back counts as negative";
  EXPECT_EQ(largest_drop({}, {}), 0);
  std::optional<GpuMemoryUsage> a = decode_usage(encode_usage({5, 1, -2}));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->collective, -2);
  GpuMemoryUsage largest = largest_usage({*a, {3, 7, -4}});
  EXPECT_EQ(largest.initialization, 5);
  EXPECT_EQ(largest.user_allocated, 7);
  EXPECT_EQ(largest.collective, -2);
  EXPECT_FALSE(decode_usage("5 1").has_value());
  EXPECT_FALSE(decode_usage("5 1 2 junk").has_value());
}

} // namespace
} // namespace fabric::nccltest
