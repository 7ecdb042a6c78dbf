#include <gtest/gtest.h>

#include "exporters/metric_sink.h"
#include "tests/unit/exporter/metrics_view.h"

namespace fabric::exporters {
namespace {

using testing::value;

TEST(MetricSink, FamiliesKeepTheirFirstHelpAndTypeAndCollectSeries) {
  MetricSink sink;
  sink.counter("fabric_x_total", "first help").add({{"a", "1"}}, 3);
  sink.family("fabric_x_total", "ignored", prometheus::MetricType::Gauge).add({{"a", "2"}}, 4);
  auto families = sink.take();
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].help, "first help");
  EXPECT_EQ(families[0].type, prometheus::MetricType::Counter);
  EXPECT_EQ(value(families, "fabric_x_total", {{"a", "2"}}), 4);
}

TEST(MetricSink, FamiliesWithoutSeriesAreLeftOut) {
  MetricSink sink;
  sink.gauge("fabric_empty", "never filled");
  sink.gauge("fabric_full", "filled").add({}, 1);
  auto families = sink.take();
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "fabric_full");
}

TEST(MetricSink, TheBudgetDropsAndCountsWhatIsOver) {
  MetricSink sink(3);
  auto g = sink.gauge("fabric_g", "g");
  int admitted = 0;
  for (int i = 0; i < 5; ++i)
    admitted += g.add({{"i", std::to_string(i)}}, i);
  EXPECT_EQ(admitted, 3);
  EXPECT_EQ(sink.series(), 3u);
  EXPECT_EQ(sink.dropped(), 2u);
  EXPECT_EQ(sink.room(), 0u);
  EXPECT_EQ(sink.take()[0].metric.size(), 3u);
}

TEST(MetricSink, ErrorsAreAllCountedAndAFewKept) {
  MetricSink sink;
  for (int i = 0; i < 20; ++i)
    sink.error("file " + std::to_string(i));
  EXPECT_EQ(sink.error_count(), 20u);
  EXPECT_EQ(sink.errors().size(), 8u);
  EXPECT_EQ(sink.errors().front(), "file 0");
}

} // namespace
} // namespace fabric::exporters
