// Textfiles: the strict parser, and the collector serving whole files only.
#include <sys/stat.h>
#include <utime.h>

#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "exporters/textfile_collector.h"
#include "exporters/textfile_parser.h"
#include "tests/unit/exporter/metrics_view.h"

namespace fabric::exporters {
namespace {

using testing::value;
namespace fs = std::filesystem;

constexpr const char* kNcclTest =
    R"(# HELP fabric_nccltest_busbw_bytes_per_second All-reduce bus bandwidth.
# TYPE fabric_nccltest_busbw_bytes_per_second gauge
fabric_nccltest_busbw_bytes_per_second{op="allreduce",size="1073741824"} 1.875e+10
fabric_nccltest_busbw_bytes_per_second{op="allreduce",size="8388608"} 9.5e9
# A comment is fine.

# TYPE fabric_nccltest_runs_total counter
fabric_nccltest_runs_total 3
)";

TEST(TextfileParser, ParsesGaugesCountersAndUntyped) {
  auto families =
      parse_exposition(std::string(kNcclTest) + "loose_metric{a=\"x\\\"y\\\\z\\n\"} -Inf\n");
  ASSERT_TRUE(families.ok()) << families.error().message();
  ASSERT_EQ(families->size(), 3u);
  EXPECT_EQ((*families)[0].help, "All-reduce bus bandwidth.");
  EXPECT_EQ(value(*families, "fabric_nccltest_busbw_bytes_per_second",
                  {{"op", "allreduce"}, {"size", "8388608"}}),
            9.5e9);
  EXPECT_EQ((*families)[1].type, prometheus::MetricType::Counter);
  EXPECT_EQ((*families)[2].type, prometheus::MetricType::Untyped);
  EXPECT_EQ(value(*families, "loose_metric", {{"a", "x\"y\\z\n"}}), -INFINITY);
}

TEST(TextfileParser, RebuildsHistogramsAndSummaries) {
  auto families = parse_exposition(R"(# TYPE lat_seconds histogram
lat_seconds_bucket{op="x",le="0.1"} 2
lat_seconds_bucket{op="x",le="1"} 5
lat_seconds_bucket{op="x",le="+Inf"} 6
lat_seconds_sum{op="x"} 3.5
lat_seconds_count{op="x"} 6
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.2
rpc_seconds{quantile="0.99"} 0.9
rpc_seconds_sum 12
rpc_seconds_count 40
)");
  ASSERT_TRUE(families.ok()) << families.error().message();
  ASSERT_EQ(families->size(), 2u);
  const auto& h = (*families)[0].metric.at(0).histogram;
  EXPECT_EQ(h.sample_count, 6u);
  EXPECT_EQ(h.sample_sum, 3.5);
  ASSERT_EQ(h.bucket.size(), 3u);
  EXPECT_EQ(h.bucket[1].cumulative_count, 5u);
  EXPECT_EQ((*families)[0].metric[0].label.size(), 1u) << "le is not a series label";
  const auto& s = (*families)[1].metric.at(0).summary;
  EXPECT_EQ(s.sample_count, 40u);
  ASSERT_EQ(s.quantile.size(), 2u);
  EXPECT_EQ(s.quantile[1].value, 0.9);
}

struct Malformed {
  const char* text;
  const char* message;
};

class TextfileParserRejects : public ::testing::TestWithParam<Malformed> {};

TEST_P(TextfileParserRejects, WithTheLine) {
  auto families = parse_exposition(GetParam().text);
  ASSERT_FALSE(families.ok());
  EXPECT_EQ(families.error().code(), ErrorCode::kDecode);
  EXPECT_EQ(families.error().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TextfileParserRejects,
    ::testing::Values(
        Malformed{"ok 1\nbad metric 2\n", "line 2: 'metric' is not a sample value"},
        Malformed{"x 1 1700000000000\n",
                  "line 1: timestamps are not accepted in textfiles (a sample is read when "
                  "scraped; its file's age says how old it is)"},
        Malformed{"x{a=\"1\"} 1\nx{a=\"1\"} 2\n", "line 2: duplicate series of x"},
        Malformed{"x 1\n# TYPE x gauge\n", "line 2: TYPE for x after its samples"},
        Malformed{"# TYPE x gauge\n# TYPE x counter\nx 1\n", "line 2: second TYPE for x"},
        Malformed{"# TYPE x widget\n", "line 1: unknown type 'widget' for x"},
        Malformed{"x{__name__=\"y\"} 1\n", "line 1: invalid label name '__name__'"},
        Malformed{"x{a=\"1\" 1\n", "line 1: expected , or } after label a"},
        Malformed{"x{a=\"1} 1\n", "line 1: label a's value has no closing quote"},
        Malformed{"x{a=\"1\",a=\"2\"} 1\n", "line 1: label a is given twice"},
        Malformed{"9x 1\n", "line 1: a sample line must start with a metric name"},
        Malformed{"# TYPE c counter\nc -1\n", "line 2: a counter cannot be negative or NaN"},
        Malformed{"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
                  "line 2: h needs a bucket with le=\"+Inf\""},
        Malformed{"# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\nh_sum "
                  "1\nh_count 2\n",
                  "line 2: h_bucket counts must be whole and cumulative"},
        Malformed{"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n",
                  "line 2: h needs its _sum and _count series"},
        Malformed{"# TYPE h histogram\nh 2\n",
                  "line 2: h is a histogram: its samples are _bucket, _sum and _count"},
        Malformed{"x{a=\"\xff\"} 1\n", "textfile: not valid UTF-8"}));

class TextfileDirectory : public ::testing::Test {
protected:
  void SetUp() override {
    char dir[] = "/tmp/fabric-textfile-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(write_file_atomic(dir_ + "/" + name, text).ok());
  }
  void age(const std::string& name, int seconds) {
    struct stat st {};
    ASSERT_EQ(::stat((dir_ + "/" + name).c_str(), &st), 0);
    utimbuf times{st.st_atime, st.st_mtime - seconds};
    ASSERT_EQ(::utime((dir_ + "/" + name).c_str(), &times), 0);
  }
  testing::Collected run(std::size_t max_series = MetricSink::kUnlimited,
                         uint64_t max_size = 4096) {
    TextfileCollector collector({dir_, std::chrono::seconds(300), max_size, 1000});
    return testing::collect(collector, max_series);
  }
  double skipped(const testing::Collected& c, const std::string& reason) {
    return value(c.families, "fabric_textfile_files_skipped", {{"reason", reason}}).value_or(-1);
  }
  std::string dir_;
};

TEST_F(TextfileDirectory, ServesValidFilesWithTheirModificationTime) {
  write("nccltest.prom", kNcclTest);
  write("notes.txt", "not a textfile 1\n");
  write(".nccltest.prom.tmp", "half a fi");
  auto c = run();
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(value(c.families, "fabric_nccltest_runs_total", {}), 3);
  EXPECT_TRUE(value(c.families, "fabric_textfile_mtime_seconds", {{"file", "nccltest.prom"}}));
  EXPECT_EQ(skipped(c, "malformed"), 0);
}

TEST_F(TextfileDirectory, AMalformedFileIsSkippedWholeAndCounted) {
  write("a_good.prom", kNcclTest);
  write("b_bad.prom", "fabric_half_served 1\nfabric_half_served{ 2\n");
  auto c = run();
  EXPECT_EQ(skipped(c, "malformed"), 1);
  EXPECT_EQ(c.errors, 1u);
  EXPECT_EQ(testing::find_family(c.families, "fabric_half_served"), nullptr)
      << "its valid first line is not served either";
  EXPECT_EQ(value(c.families, "fabric_nccltest_runs_total", {}), 3);
  ASSERT_FALSE(c.messages.empty());
  EXPECT_NE(c.messages[0].find("b_bad.prom: line 2"), std::string::npos) << c.messages[0];
}

TEST_F(TextfileDirectory, StaleLargeAndClashingFilesAreSkipped) {
  write("a.prom", "# TYPE shared gauge\nshared{x=\"1\"} 1\n");
  write("b.prom", "# TYPE shared counter\nshared{x=\"2\"} 1\n"); // another type
  write("c.prom", "shared{x=\"1\"} 5\n");                        // same series
  write("d.prom", "old_metric 1\n");
  age("d.prom", 3600);
  write("e.prom", std::string(5000, '#') + "\n");
  auto c = run();
  EXPECT_EQ(skipped(c, "conflict"), 2);
  EXPECT_EQ(skipped(c, "stale"), 1);
  EXPECT_EQ(skipped(c, "too_large"), 1);
  EXPECT_EQ(value(c.families, "shared", {{"x", "1"}}), 1);
  EXPECT_FALSE(value(c.families, "shared", {{"x", "2"}}));
  EXPECT_EQ(testing::find_family(c.families, "old_metric"), nullptr);
  EXPECT_EQ(c.errors, 3u) << "a stale file is skipped but is not an error";
}

TEST_F(TextfileDirectory, AFileOverTheSeriesBudgetIsLeftOutWhole) {
  write("a.prom", "m{i=\"1\"} 1\nm{i=\"2\"} 2\n");
  write("b.prom", "n{i=\"1\"} 1\nn{i=\"2\"} 2\nn{i=\"3\"} 3\n");
  auto c = run(4);
  EXPECT_EQ(testing::series_count(c.families, "m"), 2u);
  EXPECT_EQ(testing::find_family(c.families, "n"), nullptr);
  EXPECT_GE(c.dropped, 3u);
}

TEST_F(TextfileDirectory, AMissingDirectoryFailsTheCollector) {
  TextfileCollector collector({dir_ + "/nope", std::chrono::seconds(300), 4096, 10});
  auto c = testing::collect(collector);
  EXPECT_FALSE(c.ok);
}

} // namespace
} // namespace fabric::exporters
