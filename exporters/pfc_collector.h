// PFC pause counters per netdev and priority: the driver's ethtool statistics (read with
// the SIOCETHTOOL ioctl, no exec) mapped by pause_stat_names.h, and the vendor-neutral
// per-priority PFC request/indication counters from DCB netlink where the driver has DCB.
//
// Series exist exactly while the driver reports the counter. mlx5 reports per-priority
// pause statistics only for priorities with PFC enabled, so turning PFC off on a priority
// makes its ethtool series absent (Prometheus marks them stale) instead of reporting a 0
// that would read as "no pause frames" and then vanish. The DCB counters are reported for
// all 8 priorities whenever the device answers, as the kernel returns them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/sysfs.h"
#include "exporters/collector.h"
#include "libs/dcb/dcb_config.h"
#include "libs/ethtool/ethtool_stats.h"

namespace fabric::exporters {

using EthtoolSource = std::function<Result<std::vector<probes::EthtoolStat>>(const std::string&)>;

// The netdevs to read: `configured` when given, else those with a device link under
// class/net (physical functions, not veth or bridges).
Result<std::vector<std::string>> select_netdevs(const SysfsReader& sysfs,
                                                const std::vector<std::string>& configured);

class PfcCollector : public Collector {
public:
  PfcCollector(SysfsReader sysfs, std::vector<std::string> netdevs, EthtoolSource ethtool,
               std::unique_ptr<pfc::DcbDevice> dcb);

  std::string name() const override { return "pfc"; }
  Result<void> collect(MetricSink& sink) override;

private:
  void collect_ethtool(MetricSink& sink, const std::string& netdev);
  void collect_dcb(MetricSink& sink, const std::string& netdev);

  SysfsReader sysfs_;
  std::vector<std::string> netdevs_;
  EthtoolSource ethtool_;
  std::unique_ptr<pfc::DcbDevice> dcb_;
};

} // namespace fabric::exporters
