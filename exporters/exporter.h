// The exporter as a whole: the collectors its configuration asks for, the scraper that runs
// them, and configuration reloads that keep the running configuration when the new one is
// bad.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "exporters/accounting.h"
#include "exporters/config.h"
#include "exporters/scraper.h"

namespace fabric::exporters {

class Exporter {
public:
  explicit Exporter(Config config);
  ~Exporter();

  // One scrape: the collectors' families and the exporter's own (build info, reloads).
  std::vector<prometheus::MetricFamily> scrape();

  // Reads `path` again. A configuration that does not parse is reported and the running
  // one stays; the HTTP listen address is not reloadable (a change is logged and ignored).
  Result<void> reload(const std::string& path);

  const Config& config() const { return config_; }

private:
  // The reconciler for `config`: the running one when its configuration did not change,
  // else a new one (the old one stopped first); null when accounting is off or failed.
  std::shared_ptr<AccountingReconciler> accounting_for(const Config& config);

  std::mutex reload_mutex_; // one reload at a time; config_ and accounting_ change under it
  std::mutex mutex_;        // guards the swap of scraper_ and the reload state
  Config config_;
  std::shared_ptr<Scraper> scraper_;
  std::shared_ptr<AccountingReconciler> accounting_;
  bool last_reload_ok_ = true;
  double last_reload_seconds_ = 0;
};

// The collectors `config` enables, with their limits, in scrape order; the accounting
// collector reads through `accounting` (null: accounting is off or could not start).
void add_collectors(Scraper& scraper, const Config& config,
                    std::shared_ptr<AccountingReconciler> accounting);

} // namespace fabric::exporters
