#include "exporters/scraper.h"

#include <set>

#include "common/log.h"
#include "exporters/metric_sink.h"

namespace fabric::exporters {

void Scraper::add(std::unique_ptr<Collector> collector, CollectorLimits limits) {
  std::lock_guard lock(mutex_);
  Entry entry;
  entry.worker = std::make_unique<CollectorWorker>(std::move(collector), limits.max_series);
  entry.limits = limits;
  entries_.push_back(std::move(entry));
}

std::vector<std::string> Scraper::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_)
    out.push_back(e.worker->name());
  return out;
}

std::vector<prometheus::MetricFamily> Scraper::scrape() {
  std::lock_guard lock(mutex_);
  const auto begin = std::chrono::steady_clock::now();
  std::vector<bool> started(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i)
    started[i] = entries_[i].worker->start();

  std::vector<prometheus::MetricFamily> out;
  std::set<std::string, std::less<>> names;
  std::vector<double> durations(entries_.size(), 0);
  std::vector<bool> success(entries_.size(), false);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    const std::string& name = e.worker->name();
    if (!started[i]) {
      // Still busy with a collection that missed an earlier deadline.
      ++e.errors;
      ++e.timeouts;
      spdlog::warn("collector {}: still running from an earlier scrape; skipped", name);
      continue;
    }
    auto outcome = e.worker->wait(begin + e.limits.timeout);
    if (!outcome) {
      ++e.errors;
      ++e.timeouts;
      durations[i] = std::chrono::duration<double>(e.limits.timeout).count();
      spdlog::warn("collector {}: no answer within {} ms; served without it", name,
                   e.limits.timeout.count());
      continue;
    }
    durations[i] = outcome->seconds;
    success[i] = !outcome->failed;
    e.errors += static_cast<double>(outcome->errors);
    e.dropped += static_cast<double>(outcome->dropped);
    for (const auto& message : outcome->messages)
      spdlog::debug("collector {}: {}", name, message);
    if (outcome->errors > 0 && !outcome->messages.empty()) {
      // The cause is what an operator needs, at the level the exporter logs by default.
      const std::string& first = outcome->messages.front();
      const auto level = first == e.warned ? spdlog::level::debug : spdlog::level::warn;
      spdlog::log(level, "collector {}: {} error(s), first: {}", name, outcome->errors, first);
      e.warned = first;
    } else if (outcome->errors == 0) {
      e.warned.clear();
    }
    for (auto& family : outcome->families) {
      // Two collectors exporting one family would make the exposition invalid; the first
      // keeps it (a textfile cannot shadow a built-in family).
      if (!names.insert(family.name).second) {
        ++e.errors;
        spdlog::warn("collector {}: family {} is exported by another collector; dropped", name,
                     family.name);
        continue;
      }
      out.push_back(std::move(family));
    }
  }
  append_self_metrics(out, durations, success);
  return out;
}

void Scraper::append_self_metrics(std::vector<prometheus::MetricFamily>& out,
                                  const std::vector<double>& durations,
                                  const std::vector<bool>& success) const {
  MetricSink self;
  auto duration = self.gauge("fabric_exporter_collector_duration_seconds",
                             "How long the collector took in the last scrape (its timeout when "
                             "it did not finish).");
  auto ok = self.gauge("fabric_exporter_collector_success",
                       "1 when the collector finished within its timeout in the last scrape "
                       "and could read its source at all, else 0.");
  auto errors = self.counter("fabric_exporter_collector_errors_total",
                             "Series or sources a collector could not read, timeouts included.");
  auto timeouts = self.counter("fabric_exporter_collector_timeouts_total",
                               "Scrapes served without the collector because it missed its "
                               "timeout or was still busy.");
  auto dropped = self.counter("fabric_exporter_series_dropped_total",
                              "Series left out because the collector's max_series budget was "
                              "reached.");
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    Labels labels{{"collector", e.worker->name()}};
    duration.add(labels, durations[i]);
    ok.add(labels, success[i] ? 1 : 0);
    errors.add(labels, e.errors);
    timeouts.add(labels, e.timeouts);
    dropped.add(labels, e.dropped);
  }
  for (auto& family : self.take())
    out.push_back(std::move(family));
}

} // namespace fabric::exporters
