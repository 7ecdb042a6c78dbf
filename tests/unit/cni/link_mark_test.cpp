// The mark fabric-cni leaves in a link's alias.
#include <gtest/gtest.h>

#include <vector>

#include "cni/link_mark.h"

namespace fabric::cni {
namespace {

TEST(CniLinkMark, ExclusiveMarkRoundTripsAndFitsAnAlias) {
  const std::string digest = attachment_digest(std::string(128, 'a'), "net1");
  LinkMark mark{digest, "ens1f0np0", 9000, std::string(63, 'r')};
  std::string text = render_link_mark(mark);
  EXPECT_EQ(text.rfind("fabric-cni attachment=" + digest + " host=ens1f0np0 mtu=9000 rdma=", 0), 0u)
      << text;
  // IFALIASZ is 256 with the NUL: the longest mark must fit.
  EXPECT_LE(text.size(), 255u);
  auto parsed = parse_link_mark(text);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, mark);
  EXPECT_TRUE(marks_attachment(text, std::string(128, 'a'), "net1"));
  EXPECT_FALSE(marks_attachment(text, std::string(128, 'a'), "net2"));
}

TEST(CniLinkMark, MacvlanMarkHasTheAttachmentOnly) {
  LinkMark macvlan;
  macvlan.attachment = attachment_digest("c1", "net1");
  std::string text = render_link_mark(macvlan);
  EXPECT_EQ(text, "fabric-cni attachment=" + attachment_digest("c1", "net1"));
  auto parsed = parse_link_mark(text);
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->host_name.empty());
  EXPECT_FALSE(parsed->host_mtu);
}

TEST(CniLinkMark, DigestIsStableAndSeparatesItsParts) {
  // A change here orphans the marks of links attached before it: keep the function.
  EXPECT_EQ(attachment_digest("c1", "net1"), attachment_digest("c1", "net1"));
  EXPECT_EQ(attachment_digest("c1", "net1").size(), 16u);
  EXPECT_NE(attachment_digest("c1", "net1"), attachment_digest("c1n", "et1"));
  EXPECT_NE(attachment_digest("c1", "net1"), attachment_digest("c2", "net1"));
}

TEST(CniLinkMark, AnythingElseIsNotAMark) {
  const std::string digest = attachment_digest("c1", "net1");
  for (const std::string& alias :
       std::vector<std::string>{"", "uplink to tor-3", "fabric-cni",
                                "fabric-cni host=ens1f0", // no attachment
                                "fabric-cni attachment=" + digest.substr(1),
                                "fabric-cni attachment=" + digest + " host=../etc",
                                "fabric-cni attachment=" + digest + " host=a-name-longer-than-15",
                                "fabric-cni attachment=" + digest + " mtu=9x",
                                "fabric-cni attachment=" + digest + " mtu=67",
                                "fabric-cni attachment=" + digest + " rdma=a/b",
                                "fabric-cni attachment=" + digest + " owner=me",
                                "fabric-cni attachment=" + digest + "  host=ens1f0",
                                "Fabric-cni attachment=" + digest}) {
    EXPECT_FALSE(parse_link_mark(alias)) << alias;
  }
}

} // namespace
} // namespace fabric::cni
