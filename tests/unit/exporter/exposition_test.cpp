// The text format writer: what the strict textfile parser reads back is what was written,
// HELP and label values are escaped, numbers are exact and short.
#include <cmath>

#include <gtest/gtest.h>

#include "exporters/exposition.h"
#include "exporters/textfile_parser.h"
#include "tests/unit/exporter/metrics_view.h"

namespace fabric::exporters {
namespace {

std::string value_text(double v) {
  std::string out;
  append_value(out, v);
  return out;
}

TEST(Exposition, NumbersAreShortAndExact) {
  EXPECT_EQ(value_text(0), "0");
  EXPECT_EQ(value_text(1e9), "1000000000");
  EXPECT_EQ(value_text(-3), "-3");
  EXPECT_EQ(value_text(0.0012), "0.0012");
  EXPECT_EQ(value_text(12.5e9), "12500000000");
  EXPECT_EQ(value_text(1.8446744073709552e19), "18446744073709551616")
      << "2^64: no exponent when longer";
  EXPECT_EQ(value_text(1.5e300), "1.5e+300");
  EXPECT_EQ(value_text(NAN), "NaN");
  EXPECT_EQ(value_text(-INFINITY), "-Inf");
}

TEST(Exposition, EscapesHelpAndLabelValues) {
  prometheus::MetricFamily f;
  f.name = "fabric_test";
  f.help = "two\nlines with a \\ backslash";
  f.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric m;
  m.label = {{"path", "C:\\dir \"x\"\n"}};
  m.gauge.value = 1;
  f.metric.push_back(m);
  EXPECT_EQ(render_text({f}), "# HELP fabric_test two\\nlines with a \\\\ backslash\n"
                              "# TYPE fabric_test gauge\n"
                              "fabric_test{path=\"C:\\\\dir \\\"x\\\"\\n\"} 1\n");
}

TEST(Exposition, WhatIsWrittenReadsBackTheSame) {
  const std::string text = R"(# HELP h_seconds Latency.
# TYPE h_seconds histogram
h_seconds_bucket{op="a",le="0.5"} 1
h_seconds_bucket{op="a",le="+Inf"} 4
h_seconds_sum{op="a"} 2.25
h_seconds_count{op="a"} 4
# HELP s_seconds A summary.
# TYPE s_seconds summary
s_seconds{quantile="0.99"} 0.5
s_seconds_sum 10
s_seconds_count 20
# HELP c_total Help with a \\ and a \n.
# TYPE c_total counter
c_total{a="1",b="x\"y"} 18446744073709551616
# HELP u Untyped.
# TYPE u untyped
u -0.125
)";
  auto parsed = parse_exposition(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(render_text(*parsed), text) << "rendered and parsed: a fixed point";
  auto again = parse_exposition(render_text(*parsed));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[2].help, "Help with a \\ and a \n.");
}

TEST(Exposition, AHistogramWithoutAnInfBucketGetsOne) {
  prometheus::MetricFamily f;
  f.name = "h";
  f.help = "h";
  f.type = prometheus::MetricType::Histogram;
  prometheus::ClientMetric m;
  m.histogram.bucket = {{2, 1.0}};
  m.histogram.sample_count = 3;
  m.histogram.sample_sum = 4;
  f.metric.push_back(m);
  const std::string text = render_text({f});
  EXPECT_NE(text.find("h_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_TRUE(parse_exposition(text).ok());
}

} // namespace
} // namespace fabric::exporters
