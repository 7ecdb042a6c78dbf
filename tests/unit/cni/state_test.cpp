// Attachment state: what DEL and GC rely on after ADD, and what the exporter reads.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "cni/state.h"
#include "common/atomic_file.h"
#include "tests/support/temp_dir.h"

namespace fabric::cni {
namespace {

using fabric::testing::TempDir;

AttachmentRecord sample_record() {
  AttachmentRecord r;
  r.network = "roce";
  r.container_id = "0123456789abcdef";
  r.ifname = "net1";
  r.netns = "/var/run/netns/pod";
  r.pod_namespace = "training";
  r.pod_name = "trainer-0";
  r.pod_uid = "6f1c";
  r.cni_version = "1.0.0";
  r.parent_netdev = "ens1f0";
  r.rdma_device = "mlx5_0";
  r.pci_address = "0000:03:00.0";
  r.mac = "02:00:00:00:00:01";
  r.mtu = 9000;
  r.ips = {"10.0.0.5/24", "fd00::5/64"};
  r.primary_ifname = "eth0";
  r.primary_ips = {"10.244.3.9/24"};
  r.gid_index = 3;
  r.netconf = R"({"cniVersion":"1.0.0","name":"roce","type":"fabric-cni"})";
  r.created_at = now_rfc3339();
  return r;
}

TEST(CniState, RoundTripsEveryField) {
  auto r = sample_record();
  auto parsed = parse_record(render_record(r), "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->pod_namespace, "training");
  EXPECT_EQ(parsed->pod_name, "trainer-0");
  EXPECT_EQ(parsed->ips, r.ips);
  EXPECT_EQ(parsed->primary_ifname, "eth0");
  EXPECT_EQ(parsed->primary_ips, r.primary_ips);
  EXPECT_EQ(parsed->gid_index, 3u);
  EXPECT_EQ(parsed->netconf, r.netconf);
  EXPECT_EQ(parsed->parent_netdev, "ens1f0");
  EXPECT_EQ(parsed->mode, Mode::kShared);
  EXPECT_EQ(parsed->mtu, 9000);
}

// Exclusive mode keeps what DEL restores on the NIC; a record written before those
// fields existed reads as "nothing recorded" (DEL then falls back to the link's mark).
TEST(CniState, ExclusiveRecordsKeepTheNicsHostMtuAndAlias) {
  auto r = sample_record();
  r.mode = Mode::kExclusive;
  r.parent_mtu = 9000;
  r.parent_alias = "uplink to tor-3";
  std::string text = render_record(r);
  auto parsed = parse_record(text, "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->parent_mtu, 9000);
  EXPECT_EQ(parsed->parent_alias, "uplink to tor-3");

  // A shared record has neither field; as exclusive it is what older versions wrote.
  std::string old = render_record(sample_record());
  const std::string shared = "\"mode\": \"shared\"";
  ASSERT_NE(old.find(shared), std::string::npos) << old;
  old.replace(old.find(shared), shared.size(), "\"mode\": \"exclusive\"");
  auto legacy = parse_record(old, "test");
  ASSERT_TRUE(legacy.ok()) << legacy.error().message() << "\n" << old;
  EXPECT_EQ(legacy->parent_mtu, 0);
  EXPECT_EQ(legacy->parent_alias, "");
  EXPECT_EQ(legacy->parent_netdev, "ens1f0");
}

TEST(CniState, FilesAreRootOnlyAndRemovalIsIdempotent) {
  TempDir dir;
  StateStore store(dir.path());
  auto r = sample_record();
  ASSERT_TRUE(store.save(r).ok());
  struct stat st {};
  std::string path = store.record_path(r.network, r.container_id, r.ifname);
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir.path() + "/networks/roce").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  auto loaded = store.load(r.network, r.container_id, r.ifname);
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->container_id, r.container_id);

  ASSERT_TRUE(store.remove(r.network, r.container_id, r.ifname).ok());
  ASSERT_TRUE(store.remove(r.network, r.container_id, r.ifname).ok());
  auto gone = store.load(r.network, r.container_id, r.ifname);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
}

TEST(CniState, ListSkipsDamagedFilesAndTemporaries) {
  TempDir dir;
  StateStore store(dir.path());
  auto a = sample_record();
  auto b = sample_record();
  b.container_id = "other";
  ASSERT_TRUE(store.save(a).ok());
  ASSERT_TRUE(store.save(b).ok());
  std::ofstream(dir.path() + "/networks/roce/broken:net1.json") << "{ not json";
  std::ofstream(dir.path() + "/networks/roce/x:net1.json.tmp.123") << "{}";
  auto list = store.list("roce");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 2u);
  auto none = store.list("other-network");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// DEL loads one record by name: a file past the records' bound, or a FIFO in its place, is
// an error naming it, read no further than the bound and never waited on.
TEST(CniState, LoadIsBoundedLikeList) {
  TempDir dir;
  StateStore store(dir.path());
  auto r = sample_record();
  ASSERT_TRUE(store.save(r).ok());
  const std::string path = attachment_record_path(dir.path(), r.network, r.container_id, r.ifname);
  ASSERT_TRUE(store.load(r.network, r.container_id, r.ifname).ok());
  {
    std::ofstream big(path, std::ios::trunc);
    big << std::string(kMaxAttachmentRecordBytes + 1, ' ');
  }
  auto too_big = store.load(r.network, r.container_id, r.ifname);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().message().find("is larger than 8388608 bytes"), std::string::npos)
      << too_big.error().message();
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto fifo = store.load(r.network, r.container_id, r.ifname);
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().message().find("is not a regular file"), std::string::npos);
}

TEST(CniState, RefusesAnotherSchemaVersion) {
  std::string text = render_record(sample_record());
  auto pos = text.find("\"schema_version\": 1");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 19, "\"schema_version\": 2");
  auto parsed = parse_record(text, "state.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code(), ErrorCode::kIncompatibleVersion);
}

TEST(CniState, DistinctAttachmentsNeverShareAFile) {
  StateStore store("/s");
  // '-' may appear in both a container ID and an interface name; ':' in neither.
  EXPECT_NE(store.record_path("n", "a-b", "c"), store.record_path("n", "a", "b-c"));
}

} // namespace
} // namespace fabric::cni
