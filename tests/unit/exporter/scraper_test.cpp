// The scraper: collectors run at once under their own deadlines; a slow or failing one costs
// only its own families and shows in the self metrics.
#include <condition_variable>
#include <mutex>
#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "exporters/scraper.h"
#include "tests/unit/exporter/metrics_view.h"

namespace fabric::exporters {
namespace {

using testing::value;

class FixedCollector : public Collector {
public:
  FixedCollector(std::string name, std::string family, int errors = 0, bool fail = false)
      : name_(std::move(name)), family_(std::move(family)), errors_(errors), fail_(fail) {}
  std::string name() const override { return name_; }
  Result<void> collect(MetricSink& sink) override {
    ++calls;
    if (fail_) return Error(ErrorCode::kSystem, "reading " + name_, "gone");
    sink.gauge(family_, "test").add({{"from", name_}}, calls);
    for (int i = 0; i < errors_; ++i)
      sink.error("lost series " + std::to_string(i));
    return Ok();
  }
  int calls = 0;

private:
  std::string name_, family_;
  int errors_;
  bool fail_;
};

// Blocks in collect() until the test opens the gate; shared so that a collection still
// running after the scraper is gone finds it alive.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  bool entered = false;
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    cv.notify_all();
  }
};

class BlockedCollector : public Collector {
public:
  explicit BlockedCollector(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  std::string name() const override { return "blocked"; }
  Result<void> collect(MetricSink& sink) override {
    std::unique_lock lock(gate_->mutex);
    gate_->entered = true;
    gate_->cv.notify_all();
    gate_->cv.wait(lock, [&] { return gate_->open; });
    sink.gauge("fabric_test_blocked", "test").add({}, 1);
    return Ok();
  }

private:
  std::shared_ptr<Gate> gate_;
};

TEST(Scraper, ServesEveryCollectorWithSelfMetrics) {
  Scraper scraper;
  scraper.add(std::make_unique<FixedCollector>("a", "fabric_test_a"), {});
  scraper.add(std::make_unique<FixedCollector>("b", "fabric_test_b", 2), {});
  auto families = scraper.scrape();
  EXPECT_EQ(value(families, "fabric_test_a", {{"from", "a"}}), 1);
  EXPECT_EQ(value(families, "fabric_test_b", {{"from", "b"}}), 1);
  EXPECT_EQ(value(families, "fabric_exporter_collector_success", {{"collector", "b"}}), 1);
  EXPECT_EQ(value(families, "fabric_exporter_collector_errors_total", {{"collector", "a"}}), 0);
  EXPECT_EQ(value(families, "fabric_exporter_collector_errors_total", {{"collector", "b"}}), 2);
  families = scraper.scrape();
  EXPECT_EQ(value(families, "fabric_exporter_collector_errors_total", {{"collector", "b"}}), 4)
      << "errors accumulate: it is a counter";
  EXPECT_EQ(value(families, "fabric_test_a", {{"from", "a"}}), 2);
}

// What the exporter logs at its default level (warn) while alive in this scope.
class CapturedLog {
public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_));
    logger->set_level(spdlog::level::warn);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return text_.str(); }

private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

// A collector error's cause reaches the default log level once, not on every scrape.
TEST(Scraper, ACollectorErrorsCauseIsWarnedOnce) {
  CapturedLog log;
  Scraper scraper;
  scraper.add(std::make_unique<FixedCollector>("b", "fabric_test_b", 2), {});
  scraper.scrape();
  EXPECT_NE(log.text().find("collector b: 2 error(s), first: lost series 0"), std::string::npos)
      << log.text();
  const std::string once = log.text();
  scraper.scrape();
  EXPECT_EQ(log.text(), once) << "the same cause again is not repeated at warn";
}

TEST(Scraper, AFailingCollectorCostsOnlyItself) {
  Scraper scraper;
  scraper.add(std::make_unique<FixedCollector>("broken", "fabric_test_broken", 0, true), {});
  scraper.add(std::make_unique<FixedCollector>("fine", "fabric_test_fine"), {});
  auto families = scraper.scrape();
  EXPECT_EQ(testing::find_family(families, "fabric_test_broken"), nullptr);
  EXPECT_EQ(value(families, "fabric_test_fine", {{"from", "fine"}}), 1);
  EXPECT_EQ(value(families, "fabric_exporter_collector_success", {{"collector", "broken"}}), 0);
  EXPECT_EQ(value(families, "fabric_exporter_collector_errors_total", {{"collector", "broken"}}),
            1);
}

TEST(Scraper, ASlowCollectorIsServedWithoutAfterItsTimeoutAndSkippedWhileBusy) {
  auto gate = std::make_shared<Gate>();
  Scraper scraper;
  scraper.add(std::make_unique<BlockedCollector>(gate), {std::chrono::milliseconds(50), 100});
  scraper.add(std::make_unique<FixedCollector>("fine", "fabric_test_fine"), {});
  auto families = scraper.scrape();
  EXPECT_EQ(value(families, "fabric_test_fine", {{"from", "fine"}}), 1);
  EXPECT_EQ(testing::find_family(families, "fabric_test_blocked"), nullptr);
  EXPECT_EQ(value(families, "fabric_exporter_collector_success", {{"collector", "blocked"}}), 0);
  EXPECT_EQ(value(families, "fabric_exporter_collector_timeouts_total", {{"collector", "blocked"}}),
            1);
  EXPECT_EQ(
      value(families, "fabric_exporter_collector_duration_seconds", {{"collector", "blocked"}}),
      0.05);

  // Still stuck: the next scrape does not start a second collection, and says so.
  families = scraper.scrape();
  EXPECT_EQ(value(families, "fabric_exporter_collector_timeouts_total", {{"collector", "blocked"}}),
            2);
  EXPECT_EQ(value(families, "fabric_test_fine", {{"from", "fine"}}), 2);

  gate->release();
}

TEST(Scraper, AFamilyTwoCollectorsExportIsServedOnceFromTheFirst) {
  Scraper scraper;
  scraper.add(std::make_unique<FixedCollector>("first", "fabric_test_same"), {});
  scraper.add(std::make_unique<FixedCollector>("second", "fabric_test_same"), {});
  auto families = scraper.scrape();
  ASSERT_EQ(testing::series_count(families, "fabric_test_same"), 1u);
  EXPECT_EQ(value(families, "fabric_test_same", {{"from", "first"}}), 1);
  EXPECT_EQ(value(families, "fabric_exporter_collector_errors_total", {{"collector", "second"}}),
            1);
}

TEST(Scraper, TheSeriesBudgetIsPerCollectorAndCounted) {
  class Many : public Collector {
  public:
    std::string name() const override { return "many"; }
    Result<void> collect(MetricSink& sink) override {
      auto g = sink.gauge("fabric_test_many", "test");
      for (int i = 0; i < 10; ++i)
        g.add({{"i", std::to_string(i)}}, i);
      return Ok();
    }
  };
  Scraper scraper;
  scraper.add(std::make_unique<Many>(), {std::chrono::seconds(5), 4});
  auto families = scraper.scrape();
  EXPECT_EQ(testing::series_count(families, "fabric_test_many"), 4u);
  EXPECT_EQ(value(families, "fabric_exporter_series_dropped_total", {{"collector", "many"}}), 6);
}

} // namespace
} // namespace fabric::exporters
