// Where device information comes from. The verbs-backed source is the real one; tests
// hand the renderers DeviceInfo values directly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/rdma_device.h"
#include "common/result.h"
#include "common/sysfs.h"

namespace fabric::probes {
using rdma::DeviceInfo;

class DeviceSource {
public:
  virtual ~DeviceSource() = default;
  // Every RDMA device on the host; an empty list when there is none.
  virtual Result<std::vector<DeviceInfo>> list_devices() = 0;
};

// Reads devices through libibverbs. `sysfs` resolves GID netdev names that the caller's
// namespace cannot see (a pod's macvlan). In a build without verbs, list_devices()
// returns a kNotBuilt error.
std::unique_ptr<DeviceSource> make_verbs_device_source(SysfsReader sysfs = SysfsReader());

// Keeps only the devices named in `names` (all when empty); a name that matches nothing
// is a kNotFound error that lists what exists.
Result<std::vector<DeviceInfo>> select_devices(std::vector<DeviceInfo> devices,
                                               const std::vector<std::string>& names);

} // namespace fabric::probes
