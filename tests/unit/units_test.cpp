#include <gtest/gtest.h>

#include "common/units.h"

namespace fabric::units {
namespace {

TEST(Units, SizesAreBinary) {
  EXPECT_EQ(*parse_size("65536", "--size"), 65536u);
  EXPECT_EQ(*parse_size("64K", "--size"), 65536u);
  EXPECT_EQ(*parse_size("64KiB", "--size"), 65536u);
  EXPECT_EQ(*parse_size("1M", "--size"), 1048576u);
  EXPECT_EQ(*parse_size("2G", "--size"), 2147483648u);
  EXPECT_EQ(*parse_size("1.5K", "--size"), 1536u);
}

TEST(Units, BadSizesNameTheArgument) {
  for (const char* bad : {"", "K", "12Q", "-1", "0.3", "1.2.3K"}) {
    auto r = parse_size(bad, "--size");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(r.error().message().rfind("--size: ", 0), 0u) << r.error().message();
  }
}

TEST(Units, Durations) {
  using namespace std::chrono_literals;
  EXPECT_EQ(*parse_duration("10", "--duration"), 10s);
  EXPECT_EQ(*parse_duration("250ms", "--duration"), 250ms);
  EXPECT_EQ(*parse_duration("1.5s", "--duration"), 1500ms);
  EXPECT_EQ(*parse_duration("2m", "--duration"), 120s);
  EXPECT_EQ(*parse_duration("300us", "--duration"), 300us);
  EXPECT_FALSE(parse_duration("10 parsecs", "--duration").ok());
  EXPECT_FALSE(parse_duration("ms", "--duration").ok());
}

TEST(Units, UintRangeIsEnforced) {
  EXPECT_EQ(*parse_uint("4", "--qps", 1, 64), 4u);
  auto r = parse_uint("0", "--qps", 1, 64);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "--qps: 0 is out of range (1 to 64)");
  EXPECT_FALSE(parse_uint("4x", "--qps").ok());
}

TEST(Units, PositiveNumbers) {
  EXPECT_DOUBLE_EQ(*parse_positive("2.5", "--outlier-threshold"), 2.5);
  EXPECT_DOUBLE_EQ(*parse_positive("1e3", "--min-bw"), 1000.0);
  for (const char* bad : {"", "0", "-1", "fast", "1x", "inf", "nan"}) {
    auto r = parse_positive(bad, "--min-bw");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(r.error().message().rfind("--min-bw: ", 0), 0u) << r.error().message();
  }
}

TEST(Units, FormatSize) {
  EXPECT_EQ(format_size(100), "100 B");
  EXPECT_EQ(format_size(65536), "64 KiB");
  EXPECT_EQ(format_size(1536), "1.5 KiB");
  EXPECT_EQ(format_size(3ull << 30), "3 GiB");
}

TEST(Units, RatesUseDecimalGigabits) {
  EXPECT_DOUBLE_EQ(bytes_per_second_to_gbps(12.5e9), 100.0);
  EXPECT_DOUBLE_EQ(bytes_per_second_to_gbytes(12.5e9), 12.5);
}

} // namespace
} // namespace fabric::units
