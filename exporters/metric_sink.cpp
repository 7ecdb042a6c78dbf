#include "exporters/metric_sink.h"

#include <algorithm>

namespace fabric::exporters {

MetricSink::Family MetricSink::family(std::string_view name, std::string_view help,
                                      prometheus::MetricType type) {
  for (std::size_t i = 0; i < families_.size(); ++i) {
    if (families_[i].name == name) return Family(this, i);
  }
  prometheus::MetricFamily f;
  f.name = std::string(name);
  f.help = std::string(help);
  f.type = type;
  families_.push_back(std::move(f));
  return Family(this, families_.size() - 1);
}

bool MetricSink::admit() {
  if (series_ >= max_series_) {
    ++dropped_;
    return false;
  }
  ++series_;
  return true;
}

bool MetricSink::Family::add(Labels labels, double value) {
  if (!sink_->admit()) return false;
  prometheus::MetricFamily& f = sink_->families_[index_];
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  switch (f.type) {
  case prometheus::MetricType::Counter: m.counter.value = value; break;
  case prometheus::MetricType::Gauge: m.gauge.value = value; break;
  default: m.untyped.value = value; break;
  }
  f.metric.push_back(std::move(m));
  return true;
}

bool MetricSink::Family::add(prometheus::ClientMetric metric) {
  if (!sink_->admit()) return false;
  sink_->families_[index_].metric.push_back(std::move(metric));
  return true;
}

void MetricSink::Family::reserve(std::size_t n) {
  auto& metrics = sink_->families_[index_].metric;
  metrics.reserve(metrics.size() + std::min(n, sink_->room()));
}

void MetricSink::error(std::string what) {
  ++error_count_;
  if (errors_.size() < kKeptErrors) errors_.push_back(std::move(what));
}

std::vector<prometheus::MetricFamily> MetricSink::take() {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(families_.size());
  for (auto& f : families_) {
    if (!f.metric.empty()) out.push_back(std::move(f));
  }
  families_.clear();
  return out;
}

} // namespace fabric::exporters
