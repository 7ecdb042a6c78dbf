// The device-info file Multus puts into the pod's network-status annotation.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cni/device_info.h"
#include "cni/link_mark.h"
#include "cni/locks.h"
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

TEST(CniLocks, SecondHolderGetsTryAgain) {
  std::string dir = temp_dir();
  auto held = FileLock::parent(dir, "eth0", 1s);
  ASSERT_TRUE(held.ok()) << held.error().message();
  // flock locks belong to the open file description: a second open in this process
  // conflicts just as another process would.
  auto second = FileLock::parent(dir, "eth0", 30ms);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), ErrorCode::kTryAgain);
  EXPECT_EQ(cni_code_for(second.error().code()), 11);
  auto other_parent = FileLock::parent(dir, "eth1", 30ms);
  EXPECT_TRUE(other_parent.ok());
  std::filesystem::remove_all(dir);
}

TEST(CniLocks, RefusesAPathInTheParentName) {
  auto r = FileLock::parent("/tmp", "../etc", 10ms);
  ASSERT_FALSE(r.ok());
}

// One attachment's ADD and DEL exclude each other; another attachment (almost always
// another stripe) does not wait. Striping keeps the folder at a fixed number of files.
TEST(CniLocks, AttachmentLockIsPerAttachmentAndStriped) {
  std::string dir = temp_dir();
  const std::string mine = attachment_digest("c1", "net1");
  auto held = FileLock::attachment(dir, mine, 1s);
  ASSERT_TRUE(held.ok()) << held.error().message();
  auto again = FileLock::attachment(dir, mine, 30ms);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), ErrorCode::kTryAgain);
  // The parent lock of the same name space is another file.
  EXPECT_TRUE(FileLock::parent(dir, "net1", 30ms).ok());
  for (int i = 0; i < 300; ++i) {
    std::string other = attachment_digest("c" + std::to_string(i + 2), "net1");
    if (std::stoull(other, nullptr, 16) % kAttachmentLockStripes ==
        std::stoull(mine, nullptr, 16) % kAttachmentLockStripes) {
      continue;
    }
    EXPECT_TRUE(FileLock::attachment(dir, other, 30ms).ok()) << other;
  }
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator(dir + "/locks/attachments")) {
    ++files;
  }
  EXPECT_LE(files, kAttachmentLockStripes);
  EXPECT_FALSE(FileLock::attachment(dir, "../../x", 10ms).ok());
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace fabric::cni
