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
  // Moves the file's mtime `seconds` into the past (negative: into the future).
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
  // A collector as configured by default: no max_age.
  TextfileCollector collector(uint64_t max_size = 4096) {
    return TextfileCollector({dir_, std::chrono::seconds(0), max_size, 1000});
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
  write("b.prom", "n{i=\"1\"} 1\nn{i=\"2\"} 2\nn{i=\"3\"} 3\nn{i=\"4\"} 4\n");
  // 15: the collector's own series (8 reasons, 2 files) and 5 for the files.
  auto c = run(15);
  EXPECT_EQ(testing::series_count(c.families, "m"), 2u);
  EXPECT_EQ(testing::find_family(c.families, "n"), nullptr);
  EXPECT_GE(c.dropped, 4u);
  EXPECT_EQ(skipped(c, "series_budget"), 1);
}

TEST_F(TextfileDirectory, OldFilesAreServedWithTheirAgeAsNodeExporterDoes) {
  write("nccltest.prom", kNcclTest);
  age("nccltest.prom", 86400);
  auto textfiles = collector();
  auto c = testing::collect(textfiles);
  EXPECT_EQ(value(c.families, "fabric_nccltest_runs_total", {}), 3);
  auto mtime = value(c.families, "fabric_textfile_mtime_seconds", {{"file", "nccltest.prom"}});
  ASSERT_TRUE(mtime);
  EXPECT_LT(*mtime, static_cast<double>(std::time(nullptr) - 86000));
  EXPECT_EQ(skipped(c, "stale"), 0);
}

TEST_F(TextfileDirectory, AFileFromTheFutureIsRefusedUnlessWithinAMinute) {
  write("ahead.prom", "fabric_from_the_future 1\n");
  age("ahead.prom", -3600);
  write("skewed.prom", "fabric_skewed 1\n");
  age("skewed.prom", -30);
  auto textfiles = collector();
  auto c = testing::collect(textfiles);
  EXPECT_EQ(skipped(c, "future_mtime"), 1);
  EXPECT_EQ(testing::find_family(c.families, "fabric_from_the_future"), nullptr);
  EXPECT_EQ(value(c.families, "fabric_skewed", {}), 1);
  auto mtime = value(c.families, "fabric_textfile_mtime_seconds", {{"file", "skewed.prom"}});
  ASSERT_TRUE(mtime);
  EXPECT_LE(*mtime, static_cast<double>(std::time(nullptr) + 1)) << "served as now, not ahead";
}

TEST_F(TextfileDirectory, TheExportersOwnFamiliesCannotBeWrittenByAFile) {
  write("a.prom", "fabric_exporter_collector_success{collector=\"rdma\"} 1\n");
  write("b.prom", "fabric_exporter_config_last_reload_successful 1\n");
  write("c.prom", "fabric_nccl_processes 7\n");
  write("d.prom", "fabric_textfile_files_skipped{reason=\"conflict\"} 0\n");
  write("e.prom", "# TYPE fabric_rdma histogram\nfabric_rdma_bucket{le=\"+Inf\"} 1\n"
                  "fabric_rdma_sum 1\nfabric_rdma_count 1\n");
  write("f.prom", "fabric_nccltest_runs_total 2\n");
  auto c = run();
  EXPECT_EQ(skipped(c, "conflict"), 5);
  EXPECT_EQ(value(c.families, "fabric_nccltest_runs_total", {}), 2) << "not a reserved prefix";
  EXPECT_EQ(testing::find_family(c.families, "fabric_exporter_collector_success"), nullptr);
  EXPECT_EQ(testing::find_family(c.families, "fabric_nccl_processes"), nullptr);
  EXPECT_EQ(testing::series_count(c.families, "fabric_textfile_files_skipped"), 8u)
      << "one series per reason, none from the file";
  ASSERT_FALSE(c.messages.empty());
  EXPECT_NE(c.messages[0].find("a.prom: fabric_exporter_collector_success is under a prefix"),
            std::string::npos)
      << c.messages[0];
}

TEST_F(TextfileDirectory, AScrapeReadsABoundedAmountAndLaterOnesCatchUp) {
  for (int i = 0; i < 6; ++i) {
    write("f" + std::to_string(i) + ".prom", "fabric_padding{i=\"" + std::to_string(i) +
                                                 "\",text=\"" + std::string(3900, 'x') + "\"} 1\n");
  }
  auto textfiles = collector(4096);
  // Four files' worth of max_file_size a scrape: the first reads four and defers two.
  auto first = testing::collect(textfiles);
  EXPECT_EQ(skipped(first, "too_large"), 2);
  EXPECT_EQ(testing::series_count(first.families, "fabric_padding"), 4u);
  // Unchanged files are not read again, so the next scrape reaches the other two.
  auto second = testing::collect(textfiles);
  EXPECT_EQ(skipped(second, "too_large"), 0);
  EXPECT_EQ(testing::series_count(second.families, "fabric_padding"), 6u);
}

TEST_F(TextfileDirectory, AFileIsCountedBeforeItIsParsed) {
  std::string big;
  for (int i = 0; i < 2000; ++i)
    big += "fabric_many{i=\"" + std::to_string(i) + "\"} 1\n";
  write("big.prom", big);
  write("small.prom", "fabric_few 1\n");
  auto c = run(100, 1 << 20);
  EXPECT_EQ(skipped(c, "series_budget"), 1);
  EXPECT_EQ(testing::find_family(c.families, "fabric_many"), nullptr);
  EXPECT_EQ(value(c.families, "fabric_few", {}), 1);
  EXPECT_EQ(count_sample_lines("# HELP x y\n\n  \t\nx 1\r\n x{a=\"#\"} 2\n#x 3\n"), 2u);
}

TEST_F(TextfileDirectory, AChangedFileIsReadAgain) {
  write("a.prom", "fabric_version 1\n");
  auto textfiles = collector();
  EXPECT_EQ(value(testing::collect(textfiles).families, "fabric_version", {}), 1);
  write("a.prom", "fabric_version 2\n");
  EXPECT_EQ(value(testing::collect(textfiles).families, "fabric_version", {}), 2);
  write("a.prom", "fabric_version{ 3\n");
  auto broken = testing::collect(textfiles);
  EXPECT_EQ(skipped(broken, "malformed"), 1);
  EXPECT_EQ(skipped(testing::collect(textfiles), "malformed"), 1) << "still reported";
}

TEST_F(TextfileDirectory, AMissingDirectoryFailsTheCollector) {
  TextfileCollector collector({dir_ + "/nope", std::chrono::seconds(300), 4096, 10});
  auto c = testing::collect(collector);
  EXPECT_FALSE(c.ok);
}

} // namespace
} // namespace fabric::exporters
