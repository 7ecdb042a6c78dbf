// The collector interface: one source of metrics (RDMA ports, PFC counters, DCB state,
// per-pod accounting, textfiles), read at scrape time.
//
// The scraper (scrape.h) runs each collector on its own worker thread under its own
// deadline and series budget, so a collector may block (a sysfs read on a wedged driver,
// a netlink dump) without holding up the others. A collector is called by one thread at a
// time and may keep state between calls (counters of what it skipped, a cached socket).
//
// Adding one (the NCCL collector of the profiler plugin is the next): implement collect(),
// name its families fabric_<area>_..., give it a section in config.h, and construct it in
// exporter.cpp's make_collectors(). See exporters/README.md, "Writing a collector".
#pragma once

#include <string>

#include "common/result.h"
#include "exporters/metric_sink.h"

namespace fabric::exporters {

class Collector {
public:
  virtual ~Collector() = default;

  // The `collector` label of the self metrics: "rdma", "pfc", "dcb", "accounting", ...
  virtual std::string name() const = 0;

  // Adds what it reads to `sink`. A failure that costs some series goes to sink.error() and
  // the collection goes on; a returned Error means nothing could be read at all.
  virtual Result<void> collect(MetricSink& sink) = 0;
};

} // namespace fabric::exporters
