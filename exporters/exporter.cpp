#include "exporters/exporter.h"

#include <ctime>

#include "common/build_info.h"
#include "common/log.h"
#include "exporters/dcb_collector.h"
#include "exporters/metric_sink.h"
#include "exporters/nccl_collector.h"
#include "exporters/pfc_collector.h"
#include "exporters/rdma_collector.h"
#include "exporters/textfile_collector.h"
#include "libs/dcb/dcb_netlink.h"
#include "libs/ethtool/ethtool_stats.h"

namespace fabric::exporters {
namespace {

CollectorLimits limits(const CollectorConfig& c) {
  return {c.timeout, c.max_series};
}

} // namespace

void add_collectors(Scraper& scraper, const Config& config,
                    std::shared_ptr<AccountingReconciler> accounting) {
  if (config.rdma.enabled) {
    scraper.add(
        std::make_unique<RdmaCollector>(SysfsReader(config.sysfs_root), config.rdma.devices),
        limits(config.rdma));
  }
  if (config.pfc.enabled) {
    scraper.add(std::make_unique<PfcCollector>(SysfsReader(config.sysfs_root), config.pfc.netdevs,
                                               probes::read_ethtool_stats,
                                               pfc::make_netlink_dcb_device()),
                limits(config.pfc));
  }
  if (config.dcb.enabled) {
    scraper.add(std::make_unique<DcbCollector>(SysfsReader(config.sysfs_root), config.dcb.netdevs,
                                               pfc::make_netlink_dcb_device()),
                limits(config.dcb));
  }
  if (config.textfile.enabled) {
    TextfileOptions options{config.textfile.directory, config.textfile.max_age,
                            config.textfile.max_file_size, config.textfile.max_files};
    scraper.add(std::make_unique<TextfileCollector>(options), limits(config.textfile));
  }
  if (config.nccl.enabled) {
    nccl_profiler::ReaderOptions options;
    options.dir = config.nccl.directory;
    options.proc_root = config.nccl.proc_root;
    options.cni_state_dir = config.nccl.cni_state_dir;
    options.pod_log_dir = config.nccl.pod_log_dir;
    options.retain_exited = config.nccl.retain_exited;
    options.max_series = config.nccl.max_series / kNcclSamplesPerSeries;
    scraper.add(std::make_unique<NcclCollector>(std::move(options)), limits(config.nccl));
  }
  if (config.accounting.enabled) {
    scraper.add(std::make_unique<AccountingCollector>(std::move(accounting)),
                limits(config.accounting));
  }
}

Exporter::Exporter(Config config) : config_(std::move(config)) {
  accounting_ = accounting_for(config_);
  scraper_ = std::make_shared<Scraper>();
  add_collectors(*scraper_, config_, accounting_);
  last_reload_seconds_ = static_cast<double>(std::time(nullptr));
}

Exporter::~Exporter() = default;

std::shared_ptr<AccountingReconciler> Exporter::accounting_for(const Config& config) {
  if (accounting_ && config.accounting == config_.accounting) return accounting_;
  if (accounting_) accounting_->stop(); // the old scraper may still read its plan
  if (!config.accounting.enabled) return nullptr;
  auto started = AccountingReconciler::start(config.accounting);
  if (!started.ok()) {
    log::report_error("fabric-exporter",
                      std::move(started).error().with_context(
                          "per-pod accounting is off; the other collectors run"));
    return nullptr;
  }
  return std::move(*started);
}

std::vector<prometheus::MetricFamily> Exporter::scrape() {
  std::shared_ptr<Scraper> scraper;
  bool reload_ok;
  double reload_seconds;
  {
    std::lock_guard lock(mutex_);
    scraper = scraper_;
    reload_ok = last_reload_ok_;
    reload_seconds = last_reload_seconds_;
  }
  auto families = scraper->scrape();
  MetricSink self;
  const BuildInfo& info = build_info();
  self.gauge("fabric_exporter_build_info", "fabric-exporter's version and git revision (value 1).")
      .add({{"version", info.version}, {"revision", info.git_revision}}, 1);
  self.gauge("fabric_exporter_config_last_reload_successful",
             "1 when the last configuration load succeeded, 0 when it failed and the previous "
             "configuration is still in use.")
      .add({}, reload_ok ? 1 : 0);
  self.gauge("fabric_exporter_config_last_reload_success_timestamp_seconds",
             "When the configuration in use was loaded, in seconds since the epoch.")
      .add({}, reload_seconds);
  for (auto& family : self.take())
    families.push_back(std::move(family));
  return families;
}

Result<void> Exporter::reload(const std::string& path) {
  auto config = load_config(path);
  std::lock_guard reloading(reload_mutex_);
  if (!config.ok()) {
    std::lock_guard lock(mutex_);
    last_reload_ok_ = false;
    return std::move(config).error().with_context("reloading the configuration; the previous "
                                                  "one stays in use");
  }
  if (config->http.listen != config_.http.listen) {
    spdlog::warn("http.listen changed to {}; a restart is needed to listen there",
                 config->http.listen);
    config->http = config_.http;
  }
  // Built outside mutex_: starting accounting runs iptables, and scrapes go on meanwhile.
  auto accounting = accounting_for(*config);
  auto scraper = std::make_shared<Scraper>();
  add_collectors(*scraper, *config, accounting);
  std::lock_guard lock(mutex_);
  config_ = std::move(*config);
  accounting_ = std::move(accounting);
  scraper_ = std::move(scraper);
  last_reload_ok_ = true;
  last_reload_seconds_ = static_cast<double>(std::time(nullptr));
  return Ok();
}

} // namespace fabric::exporters
