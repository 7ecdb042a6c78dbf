// The device source of a build without verbs (-DWITH_VERBS=OFF): says so plainly.
#include "probes/devices/device_source.h"

namespace fabric::probes {
using namespace fabric::rdma;
namespace {

class UnbuiltDeviceSource final : public DeviceSource {
public:
  Result<std::vector<DeviceInfo>> list_devices() override {
    return Error(ErrorCode::kNotBuilt, "listing RDMA devices",
                 "this build of fabric-probe has no RDMA support")
        .with_hint("rebuild with -DWITH_VERBS=ON (needs libibverbs-dev)");
  }
};

} // namespace

std::unique_ptr<DeviceSource> make_verbs_device_source(SysfsReader) {
  return std::make_unique<UnbuiltDeviceSource>();
}

} // namespace fabric::probes
