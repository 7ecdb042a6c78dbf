// Reading metric families back in exporter tests: one series' value by name and labels,
// and running a collector the way the scraper does.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "exporters/collector.h"
#include "exporters/metric_sink.h"

namespace fabric::exporters::testing {

using LabelMap = std::map<std::string, std::string>;

inline double value_of(const prometheus::MetricFamily& f, const prometheus::ClientMetric& m) {
  switch (f.type) {
  case prometheus::MetricType::Counter: return m.counter.value;
  case prometheus::MetricType::Gauge: return m.gauge.value;
  default: return m.untyped.value;
  }
}

inline const prometheus::MetricFamily*
find_family(const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// The value of the series of `name` whose labels are exactly `labels`.
inline std::optional<double> value(const std::vector<prometheus::MetricFamily>& families,
                                   const std::string& name, const LabelMap& labels) {
  const auto* f = find_family(families, name);
  if (f == nullptr) return std::nullopt;
  for (const auto& m : f->metric) {
    LabelMap got;
    for (const auto& l : m.label)
      got[l.name] = l.value;
    if (got == labels) return value_of(*f, m);
  }
  return std::nullopt;
}

inline std::size_t series_count(const std::vector<prometheus::MetricFamily>& families,
                                const std::string& name) {
  const auto* f = find_family(families, name);
  return f == nullptr ? 0 : f->metric.size();
}

struct Collected {
  std::vector<prometheus::MetricFamily> families;
  std::size_t errors = 0;
  std::size_t dropped = 0;
  std::vector<std::string> messages;
  bool ok = true;
};

inline Collected collect(Collector& collector, std::size_t max_series = MetricSink::kUnlimited) {
  MetricSink sink(max_series);
  auto result = collector.collect(sink);
  Collected out;
  out.ok = result.ok();
  if (!result.ok()) out.messages.push_back(result.error().message());
  out.errors = sink.error_count();
  out.dropped = sink.dropped();
  for (const auto& m : sink.errors())
    out.messages.push_back(m);
  out.families = sink.take();
  return out;
}

} // namespace fabric::exporters::testing
