// Identifiers from the runtime are checked before they become file names or link names.
#include <gtest/gtest.h>

#include "cni/names.h"

namespace fabric::cni {
namespace {

TEST(CniNames, AcceptsRuntimeContainerIds) {
  EXPECT_TRUE(validate_container_id(std::string(64, 'a'), "CNI_CONTAINERID").ok());
  EXPECT_TRUE(validate_container_id("pod-1_a.b", "CNI_CONTAINERID").ok());
}

TEST(CniNames, RefusesPathTraversalAndOddCharacters) {
  for (const char* bad : {"../../etc/passwd", "a/b", ".hidden", "-flag", "a b", ""}) {
    auto r = validate_container_id(bad, "CNI_CONTAINERID");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidEnvironment);
    EXPECT_NE(r.error().message().find("CNI_CONTAINERID"), std::string::npos);
  }
}

TEST(CniNames, RefusesOverlongContainerId) {
  auto r = validate_container_id(std::string(kMaxContainerIdLength + 1, 'a'), "CNI_CONTAINERID");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("limit"), std::string::npos);
}

TEST(CniNames, InterfaceNamesFollowTheKernel) {
  EXPECT_TRUE(validate_interface_name("net1", "CNI_IFNAME").ok());
  EXPECT_TRUE(validate_interface_name(std::string(15, 'x'), "CNI_IFNAME").ok());
  for (const char* bad : {"", ".", "..", "a/b", "eth:0", "a b", "sixteen-chars-xx"}) {
    auto r = validate_interface_name(bad, "CNI_IFNAME");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("CNI_IFNAME"), std::string::npos);
  }
}

TEST(CniNames, NetworkNamesAreConfigErrors) {
  auto r = validate_network_name("bad/name", "name");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidConfig);
}

} // namespace
} // namespace fabric::cni
