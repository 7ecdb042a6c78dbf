// One collector on its own thread, so that a scrape can stop waiting for it at a deadline
// while it goes on (a thread blocked in a read cannot be interrupted). A collection that
// misses its deadline finishes in the background and is thrown away; until it does, the
// collector is skipped rather than started a second time, so a wedged source costs one
// thread, never a pile of them.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/metric_family.h>

#include "exporters/collector.h"

namespace fabric::exporters {

struct CollectionOutcome {
  std::vector<prometheus::MetricFamily> families;
  std::size_t dropped = 0; // series over the budget
  std::size_t errors = 0;  // partial failures, plus one for a returned Error
  std::vector<std::string> messages;
  bool failed = false; // collect() returned an Error
  double seconds = 0;
};

class CollectorWorker {
public:
  CollectorWorker(std::unique_ptr<Collector> collector, std::size_t max_series);
  // Joins the thread when it is idle; leaves a busy one to finish on its own.
  ~CollectorWorker();
  CollectorWorker(const CollectorWorker&) = delete;
  CollectorWorker& operator=(const CollectorWorker&) = delete;

  const std::string& name() const { return name_; }

  // Starts a collection; false when the previous one is still running.
  bool start();
  // The outcome of the collection start() began, or nullopt if it is not done by `deadline`.
  std::optional<CollectionOutcome> wait(std::chrono::steady_clock::time_point deadline);

private:
  struct State;
  static void run(std::shared_ptr<State> state);

  std::string name_;
  std::shared_ptr<State> state_;
  std::thread thread_;
};

} // namespace fabric::exporters
