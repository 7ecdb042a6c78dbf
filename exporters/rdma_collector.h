// RDMA ports from sysfs (read-only): state, rate, MTU and link layer of every port, its
// PMA counters (ports/P/counters) and the hw_counters that matter on RoCE.
//
// Every value is one file, and a file that cannot be read (missing, "N/A", a device that
// vanished between listing and reading) costs that series and one error; the rest of the
// scrape is served. A device without a counters directory (bnxt_re, rxe) reports
// fabric_rdma_port_counters_present{directory="counters"} 0 rather than an error.
#pragma once

#include <string>
#include <vector>

#include "common/sysfs.h"
#include "exporters/collector.h"

namespace fabric::exporters {

class RdmaCollector : public Collector {
public:
  // `devices` empty: every device under class/infiniband.
  RdmaCollector(SysfsReader sysfs, std::vector<std::string> devices = {})
      : sysfs_(std::move(sysfs)), devices_(std::move(devices)) {}

  std::string name() const override { return "rdma"; }
  Result<void> collect(MetricSink& sink) override;

private:
  SysfsReader sysfs_;
  std::vector<std::string> devices_;
};

// "4: ACTIVE" -> 4; the number the kernel prints before the colon.
std::optional<unsigned> parse_port_state(const std::string& text);
// "100 Gb/sec (4X EDR)" -> 12.5e9 bytes per second.
std::optional<double> parse_rate_bytes_per_second(const std::string& text);
// The RoCE active MTU for a netdev MTU, as the kernel's iboe_get_mtu() computes it (the
// largest IB MTU that fits once the RoCE headers are taken off); 0 below 256.
unsigned roce_mtu_for_netdev_mtu(unsigned netdev_mtu);

} // namespace fabric::exporters
