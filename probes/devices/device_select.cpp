#include <algorithm>

#include "probes/devices/device_source.h"

namespace fabric::probes {
using namespace fabric::rdma;

Result<std::vector<DeviceInfo>> select_devices(std::vector<DeviceInfo> devices,
                                               const std::vector<std::string>& names) {
  if (names.empty()) return devices;
  std::vector<DeviceInfo> chosen;
  for (const auto& name : names) {
    auto it = std::find_if(devices.begin(), devices.end(),
                           [&](const DeviceInfo& d) { return d.name == name; });
    if (it == devices.end()) {
      std::string known;
      for (const auto& d : devices)
        known += (known.empty() ? "" : ", ") + d.name;
      return Error(ErrorCode::kNotFound, "--device " + name,
                   known.empty() ? "no RDMA device on this host"
                                 : "no such RDMA device (have: " + known + ")");
    }
    chosen.push_back(*it);
  }
  return chosen;
}

} // namespace fabric::probes
