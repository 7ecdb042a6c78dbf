// What a collector hands back: metric families, within a series budget, and the partial
// failures it met on the way (one unreadable file costs one series, not the scrape).
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

namespace fabric::exporters {

using Labels = std::vector<prometheus::ClientMetric::Label>;

class MetricSink {
public:
  static constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

  // A family being filled; cheap to copy, valid while its sink lives.
  class Family {
  public:
    // One series of a counter, gauge or untyped family. False when the budget dropped it.
    bool add(Labels labels, double value);
    // A whole sample (summaries and histograms).
    bool add(prometheus::ClientMetric metric);
    // Room for `n` more series, when the collector knows how many it will add.
    void reserve(std::size_t n);

  private:
    friend class MetricSink;
    Family(MetricSink* sink, std::size_t index) : sink_(sink), index_(index) {}
    MetricSink* sink_;
    std::size_t index_;
  };

  explicit MetricSink(std::size_t max_series = kUnlimited) : max_series_(max_series) {}

  // The family `name`, begun on first use; later calls return the same family (its help
  // and type are those of the first call).
  Family family(std::string_view name, std::string_view help, prometheus::MetricType type);
  Family counter(std::string_view name, std::string_view help) {
    return family(name, help, prometheus::MetricType::Counter);
  }
  Family gauge(std::string_view name, std::string_view help) {
    return family(name, help, prometheus::MetricType::Gauge);
  }

  // How many more series the budget takes.
  std::size_t room() const { return max_series_ - series_; }
  // Series the collector left out itself to keep something whole within the budget.
  void count_dropped(std::size_t n) { dropped_ += n; }

  // A partial failure: what was lost, for the log. Every call counts as one error.
  void error(std::string what);

  std::size_t series() const { return series_; }
  std::size_t dropped() const { return dropped_; }
  std::size_t error_count() const { return error_count_; }
  // The first few error messages (bounded: a scrape with a thousand failures logs a few).
  const std::vector<std::string>& errors() const { return errors_; }

  // The families that received at least one series, in the order they were begun.
  std::vector<prometheus::MetricFamily> take();

private:
  static constexpr std::size_t kKeptErrors = 8;
  bool admit();

  std::size_t max_series_;
  std::size_t series_ = 0;
  std::size_t dropped_ = 0;
  std::size_t error_count_ = 0;
  std::vector<std::string> errors_;
  std::vector<prometheus::MetricFamily> families_;
};

} // namespace fabric::exporters
