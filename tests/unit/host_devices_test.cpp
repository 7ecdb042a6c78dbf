// fabric-probe devices against this host's real libibverbs and sysfs.
#include <gtest/gtest.h>

#include "common/json.h"
#include "common/rdma_sysfs.h"
#include "common/subprocess.h"
#include "common/verbs_handles.h"
#include "probes/devices/device_report.h"

namespace fabric {
namespace {

bool host_has_rdma() {
  auto devices = rdma::list_sysfs_devices(SysfsReader());
  return devices.ok() && !devices->empty();
}

TEST(HostDevices, VerbsDeviceListAgreesWithSysfs) {
  auto list = verbs::DeviceList::get();
  ASSERT_TRUE(list.ok()) << list.error().message();
  auto sysfs = rdma::list_sysfs_devices(SysfsReader());
  ASSERT_TRUE(sysfs.ok());
  EXPECT_EQ(list->size(), sysfs->size());
}

TEST(HostDevices, WithoutRdmaTheProbeSaysSoPlainly) {
  if (host_has_rdma()) GTEST_SKIP() << "this host has RDMA devices; the vm tier covers them";
  auto text = run_subprocess({FABRIC_PROBE_BINARY, "devices"});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->exit_status, 0);
  EXPECT_EQ(text->stdout_text, std::string(probes::kNoRdmaDevice) + "\n");
  auto json = run_subprocess({FABRIC_PROBE_BINARY, "devices", "--json"});
  ASSERT_TRUE(json.ok());
  auto doc = json::parse(json->stdout_text, "fabric-probe devices --json");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ((*doc)["devices"].Size(), 0u);
  auto named = run_subprocess({FABRIC_PROBE_BINARY, "devices", "-d", "mlx5_0"});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->exit_status, 2);
  EXPECT_NE(named->stderr_text.find("mlx5_0"), std::string::npos) << named->stderr_text;
}

} // namespace
} // namespace fabric
