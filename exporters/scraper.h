// A scrape: every collector at once, each on its own worker under its own deadline and
// series budget; what came back in time is served, with the self metrics that say what
// did not (fabric_exporter_collector_*).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "exporters/collector.h"
#include "exporters/collector_worker.h"

namespace fabric::exporters {

struct CollectorLimits {
  std::chrono::milliseconds timeout{5000};
  std::size_t max_series = 10000;
};

class Scraper {
public:
  Scraper() = default;
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  void add(std::unique_ptr<Collector> collector, CollectorLimits limits);

  // One scrape. Safe to call from several threads; they take turns.
  std::vector<prometheus::MetricFamily> scrape();

  // Collector names, in the order they were added.
  std::vector<std::string> names() const;

private:
  struct Entry {
    std::unique_ptr<CollectorWorker> worker;
    CollectorLimits limits;
    // Totals since start, for the counters.
    double errors = 0;
    double timeouts = 0;
    double dropped = 0;
    // The first error of the last scrape that had one, warned about once: a counter that
    // reads N/A on every scrape is one warning, and a new cause is another.
    std::string warned;
  };
  void append_self_metrics(std::vector<prometheus::MetricFamily>& out,
                           const std::vector<double>& durations,
                           const std::vector<bool>& success) const;

  std::mutex mutex_;
  std::vector<Entry> entries_;
};

} // namespace fabric::exporters
