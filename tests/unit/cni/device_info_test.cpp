// The device-info file Multus puts into the pod's network-status annotation.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cni/device_info.h"
#include "cni/parent_lock.h"
#include "common/atomic_file.h"
#include "common/json.h"

namespace fabric::cni {
namespace {

using namespace std::chrono_literals;

std::string temp_dir() {
  char tmpl[] = "/tmp/fabric-cni-devinfo-XXXXXX";
  return ::mkdtemp(tmpl);
}

TEST(CniDeviceInfo, WritesTheSpecShape) {
  auto text = merge_device_info("", {"0000:03:00.1", "mlx5_2"});
  ASSERT_TRUE(text.ok());
  auto doc = json::parse(*text, "device-info");
  ASSERT_TRUE(doc.ok());
  EXPECT_STREQ((*doc)["type"].GetString(), "pci");
  EXPECT_STREQ((*doc)["version"].GetString(), "1.1.0");
  EXPECT_STREQ((*doc)["pci"]["pci-address"].GetString(), "0000:03:00.1");
  EXPECT_STREQ((*doc)["pci"]["rdma-device"].GetString(), "mlx5_2");
}

TEST(CniDeviceInfo, KeepsWhatTheDevicePluginWrote) {
  std::string existing =
      R"({"type":"pci","version":"1.0.0","pci":{"pci-address":"0000:03:00.1","pf-pci-address":"0000:03:00.0"},"extra":{"k":1}})";
  auto text = merge_device_info(existing, {"", "mlx5_2"});
  ASSERT_TRUE(text.ok());
  auto doc = json::parse(*text, "device-info");
  ASSERT_TRUE(doc.ok());
  EXPECT_STREQ((*doc)["pci"]["pci-address"].GetString(), "0000:03:00.1");
  EXPECT_STREQ((*doc)["pci"]["pf-pci-address"].GetString(), "0000:03:00.0");
  EXPECT_STREQ((*doc)["pci"]["rdma-device"].GetString(), "mlx5_2");
  EXPECT_EQ((*doc)["extra"]["k"].GetInt(), 1);
}

TEST(CniDeviceInfo, RefusesToOverwriteSomethingElse) {
  auto text = merge_device_info("[1,2,3]", {"0000:03:00.1", "mlx5_2"});
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message().find("not overwriting"), std::string::npos);
}

TEST(CniDeviceInfo, ReportsWhetherItCreatedTheFile) {
  std::string dir = temp_dir();
  std::string path = dir + "/sub/net1.json";
  auto first = write_device_info(path, {"0000:03:00.1", "mlx5_2"});
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_TRUE(first->created);
  auto second = write_device_info(path, {"0000:03:00.1", "mlx5_2"});
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->created);
  std::filesystem::remove_all(dir);
}

TEST(CniParentLock, SecondHolderGetsTryAgain) {
  std::string dir = temp_dir();
  auto held = ParentLock::acquire(dir, "eth0", 1s);
  ASSERT_TRUE(held.ok()) << held.error().message();
  // flock locks belong to the open file description: a second open in this process
  // conflicts just as another process would.
  auto second = ParentLock::acquire(dir, "eth0", 30ms);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), ErrorCode::kTryAgain);
  EXPECT_EQ(cni_code_for(second.error().code()), 11);
  auto other_parent = ParentLock::acquire(dir, "eth1", 30ms);
  EXPECT_TRUE(other_parent.ok());
  std::filesystem::remove_all(dir);
}

TEST(CniParentLock, RefusesAPathInTheParentName) {
  auto r = ParentLock::acquire("/tmp", "../etc", 10ms);
  ASSERT_FALSE(r.ok());
}

} // namespace
} // namespace fabric::cni
