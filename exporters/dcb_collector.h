// DCB state per netdev over DCB netlink, through the same transport as `fabric-pfc show`:
// which priorities are lossless, the priority -> traffic class map, ETS shares, the DSCP ->
// priority APP entries, and a hash of the whole normalized configuration.
//
// A netdev whose driver has no DCB (veth, virtio_net, a NIC without dcbnl ops) reports
// fabric_dcb_supported 0 and nothing else; that is a fact about the device, not an error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/sysfs.h"
#include "exporters/collector.h"
#include "libs/dcb/dcb_config.h"

namespace fabric::exporters {

class DcbCollector : public Collector {
public:
  DcbCollector(SysfsReader sysfs, std::vector<std::string> netdevs,
               std::unique_ptr<pfc::DcbDevice> dcb)
      : sysfs_(std::move(sysfs)), netdevs_(std::move(netdevs)), dcb_(std::move(dcb)) {}

  std::string name() const override { return "dcb"; }
  Result<void> collect(MetricSink& sink) override;

private:
  SysfsReader sysfs_;
  std::vector<std::string> netdevs_;
  std::unique_ptr<pfc::DcbDevice> dcb_;
};

} // namespace fabric::exporters
