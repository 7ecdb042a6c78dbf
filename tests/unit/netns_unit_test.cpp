// The parts of the namespace helper that need no privileges; entering a namespace is in
// the netns tier.
#include <gtest/gtest.h>

#include "common/netns.h"

namespace fabric::netns {
namespace {

TEST(Netns, OpensTheCurrentNamespace) {
  auto a = open_current();
  ASSERT_TRUE(a.ok()) << a.error().message();
  auto b = open("/proc/self/ns/net");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(*same(a->get(), b->get()));
}

TEST(Netns, MissingPathIsNotFoundAndNamed) {
  auto r = open("/var/run/netns/fabric-no-such-namespace");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("fabric-no-such-namespace"), std::string::npos);
}

TEST(Netns, APlainFileIsNotANamespace) {
  auto r = open("/etc/hostname");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
}

TEST(Netns, RunInReportsWhyItCouldNotEnter) {
  auto r = run_in("/var/run/netns/fabric-no-such-namespace", []() -> Result<int> { return 1; });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
}

} // namespace
} // namespace fabric::netns
