// The attachment record as a file format: records fabric-cni writes today still read (and
// write back byte for byte), a version this reader does not know is refused, and a
// directory of records is read as untrusted input.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "libs/attachment_record/attachment_record.h"
#include "tests/support/temp_dir.h"

namespace fabric::cni {
namespace {

using fabric::testing::TempDir;

std::string fixture(const std::string& name) {
  auto text = read_file(std::string(FABRIC_TEST_DATA_DIR) + "/attachment_record/" + name);
  EXPECT_TRUE(text.ok()) << text.error().message();
  return text.ok() ? *text : "";
}

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Written by fabric-cni before the format had its own library: every later reader must
// still read them, and the writer must still write them the same way.
TEST(AttachmentRecord, ReadsTheRecordsFabricCniWritesToday) {
  const std::string shared = fixture("v1_shared.json");
  auto r = parse_record(shared, "v1_shared.json");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->network, "roce");
  EXPECT_EQ(r->container_id, "3f9a0c1d2e4b");
  EXPECT_EQ(r->ifname, "net1");
  EXPECT_EQ(r->pod_namespace, "training");
  EXPECT_EQ(r->pod_name, "trainer-0");
  EXPECT_EQ(r->pod_uid, "6f1c2d3e-0000-4000-8000-000000000001");
  EXPECT_EQ(r->mode, Mode::kShared);
  EXPECT_EQ(r->parent_netdev, "ens1f0");
  EXPECT_EQ(r->rdma_device, "mlx5_0");
  EXPECT_EQ(r->rdma_port, 1u);
  EXPECT_EQ(r->ips, std::vector<std::string>{"10.10.0.5/16"});
  EXPECT_EQ(r->primary_ifname, "eth0");
  EXPECT_EQ(r->primary_ips, (std::vector<std::string>{"10.244.1.7/24", "fd00:10:244::7/64"}));
  EXPECT_EQ(r->gid_index, 3u);
  EXPECT_EQ(r->netconf, R"({"cniVersion":"1.0.0","name":"roce","type":"fabric-cni"})");
  EXPECT_EQ(r->created_at, "2026-11-21T07:25:00Z");
  EXPECT_EQ(render_record(*r), shared);

  const std::string exclusive = fixture("v1_exclusive.json");
  auto x = parse_record(exclusive, "v1_exclusive.json");
  ASSERT_TRUE(x.ok()) << x.error().message();
  EXPECT_EQ(x->mode, Mode::kExclusive);
  EXPECT_EQ(x->parent_mtu, 9000);
  EXPECT_EQ(x->parent_alias, "uplink to tor-3");
  EXPECT_TRUE(x->rdma_device_moved);
  EXPECT_FALSE(x->gid_index.has_value());
  EXPECT_EQ(render_record(*x), exclusive);
}

TEST(AttachmentRecord, RefusesAVersionItDoesNotKnow) {
  std::string text = fixture("v1_shared.json");
  const std::string v1 = "\"schema_version\": 1";
  const auto pos = text.find(v1);
  ASSERT_NE(pos, std::string::npos) << text;

  std::string v2 = text;
  v2.replace(pos, v1.size(), "\"schema_version\": 2");
  auto newer = parse_record(v2, "net1.json");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().code(), ErrorCode::kIncompatibleVersion);
  EXPECT_NE(newer.error().message().find("net1.json"), std::string::npos)
      << newer.error().message();
  EXPECT_NE(newer.error().message().find("schema_version 2 is not the supported 1"),
            std::string::npos)
      << newer.error().message();

  std::string none = text;
  none.erase(pos, v1.size() + 1); // and its comma
  auto unversioned = parse_record(none, "net1.json");
  ASSERT_FALSE(unversioned.ok()) << none;
  EXPECT_EQ(unversioned.error().code(), ErrorCode::kIncompatibleVersion);
  EXPECT_NE(unversioned.error().message().find("without schema_version"), std::string::npos)
      << unversioned.error().message();

  std::string text_version = text;
  text_version.replace(pos, v1.size(), "\"schema_version\": \"1\"");
  auto wrong_type = parse_record(text_version, "net1.json");
  ASSERT_FALSE(wrong_type.ok());
  // Well-formed JSON with a value of the wrong type.
  EXPECT_EQ(wrong_type.error().code(), ErrorCode::kInvalidConfig);
  EXPECT_NE(wrong_type.error().message().find("schema_version"), std::string::npos)
      << wrong_type.error().message();
}

TEST(AttachmentRecord, HostileRecordsAreRefusedNotFollowed) {
  std::string text = fixture("v1_shared.json");
  // Nesting past json::kMaxDepth in a field the reader never looks at.
  std::string deep = text;
  deep.insert(deep.find('{') + 1, "\"x\": " + std::string(100000, '[') +
                                      std::string(100000, ']') + ",");
  auto nested = parse_record(deep, "deep.json");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().code(), ErrorCode::kDecode);
  EXPECT_NE(nested.error().message().find("nest deeper"), std::string::npos)
      << nested.error().message();

  struct Case {
    std::string from, to, field;
  };
  for (const auto& [from, to, field] : std::vector<Case>{
           {"\"pod\": {", "\"pod\": 7, \"unused\": {", "pod"},
           {"\"mode\": \"shared\"", "\"mode\": \"bridged\"", "mode"},
           {"\"ips\": [", "\"ips\": [7, ", "ips"},
           {"\"network\": \"roce\"", "\"network\": null", "network"}}) {
    std::string bad = text;
    ASSERT_NE(bad.find(from), std::string::npos) << from;
    bad.replace(bad.find(from), from.size(), to);
    auto parsed = parse_record(bad, "bad.json");
    ASSERT_FALSE(parsed.ok()) << to;
    // The refusal names the file and the field, whatever the kind of error.
    EXPECT_NE(parsed.error().message().find("bad.json"), std::string::npos)
        << parsed.error().message();
    EXPECT_NE(parsed.error().message().find(field), std::string::npos)
        << parsed.error().message();
  }
}

TEST(AttachmentRecord, ReadsADirectoryAsUntrustedInput) {
  TempDir state;
  const std::string dir = attachment_records_dir(state.path(), "roce");
  ASSERT_TRUE(make_directories(dir, 0700).ok());
  const std::string good = fixture("v1_shared.json");
  put(attachment_record_path(state.path(), "roce", "a", "net1"), good);
  put(attachment_record_path(state.path(), "roce", "b", "net1"), "{ not json");
  put(dir + "/c:net1.json.tmp.123", "{}"); // a writer's temporary file
  // Larger than any record fabric-cni writes: refused without reading it all.
  const std::string huge = attachment_record_path(state.path(), "roce", "d", "net1");
  put(huge, "");
  ASSERT_EQ(::truncate(huge.c_str(), kMaxAttachmentRecordBytes + 1), 0);
  const std::string fifo = attachment_record_path(state.path(), "roce", "e", "net1");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0); // would block a reader that opened it plainly

  auto found = read_records(state.path(), "roce");
  ASSERT_TRUE(found.ok()) << found.error().message();
  ASSERT_EQ(found->records.size(), 1u);
  EXPECT_EQ(found->records[0].pod_name, "trainer-0");
  ASSERT_EQ(found->skipped.size(), 3u);
  EXPECT_NE(found->skipped[0].find("b:net1.json"), std::string::npos) << found->skipped[0];
  EXPECT_NE(found->skipped[1].find("larger than"), std::string::npos) << found->skipped[1];
  EXPECT_NE(found->skipped[2].find("not a regular file"), std::string::npos)
      << found->skipped[2];

  auto none = read_records(state.path(), "no-such-network");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->records.empty());
  EXPECT_TRUE(none->skipped.empty());
}

} // namespace
} // namespace fabric::cni
