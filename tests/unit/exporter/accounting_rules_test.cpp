// Rule generation for per-pod accounting, and the pod records it starts from.
#include <sys/socket.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "exporters/accounting_rules.h"
#include "exporters/iptables.h"
#include "exporters/pod_records.h"

namespace fabric::exporters {
namespace {

namespace fs = std::filesystem;

std::vector<TrafficClass> classes() {
  return {{"services", {*parse_network("10.96.0.0/12")}},
          {"cluster", {*parse_network("10.0.0.0/8"), *parse_network("fd00::/8")}}};
}

PodAddresses pod(const std::string& ns, const std::string& name, std::vector<std::string> ips) {
  PodAddresses p{ns, name, {}};
  for (const auto& ip : ips)
    p.addresses.push_back(*parse_host(ip));
  return p;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(AccountingRules, DepositBitsSpreadsAValueOverTheMask) {
  EXPECT_EQ(deposit_bits(0, 0x3000), 0u);
  EXPECT_EQ(deposit_bits(1, 0x3000), 0x1000u);
  EXPECT_EQ(deposit_bits(3, 0x3000), 0x3000u);
  EXPECT_EQ(deposit_bits(5, 0x00010110), 0x00010010u) << "bits 4, 8 and 16 carry 1, 0, 1";
  EXPECT_EQ(mark_spec(0x1000, 0x3000), "0x1000/0x3000");
}

TEST(AccountingRules, ClassifyFirstClassLastSoItWinsThenFindThePodInOneSetLookup) {
  auto plan = plan_accounting(classes(), 0x3000, {pod("train", "worker-0", {"10.1.0.5"})});
  const std::string& v4 = plan.v4.restore;
  ASSERT_TRUE(v4.starts_with("*mangle\n")) << v4;
  ASSERT_TRUE(v4.ends_with("COMMIT\n"));
  // cluster (class 2) contains services (class 1): services is written last and wins.
  const auto cluster =
      v4.find("-A FABRIC-ACCT-DST -d 10.0.0.0/8 -j MARK --set-xmark 0x2000/0x3000");
  const auto services =
      v4.find("-A FABRIC-ACCT-DST -d 10.96.0.0/12 -j MARK --set-xmark 0x1000/0x3000");
  ASSERT_NE(cluster, std::string::npos) << v4;
  ASSERT_NE(services, std::string::npos) << v4;
  EXPECT_LT(cluster, services);
  EXPECT_TRUE(has_line(v4, "-A FABRIC-ACCT-DST -j MARK --set-xmark 0x0/0x3000")) << "external";
  EXPECT_TRUE(has_line(v4, "-A FABRIC-ACCT-SRC -s 10.96.0.0/12 -j MARK --set-xmark 0x1000/0x3000"));
  // One rule per class and direction, whatever the number of pods: the mark picks the
  // class's set, the set finds the pod.
  EXPECT_TRUE(has_line(
      v4,
      "-A FABRIC-ACCT-TX -m mark --mark 0x2000/0x3000 -m set --match-set fabric-acct-tx4-2 src"));
  EXPECT_TRUE(has_line(
      v4, "-A FABRIC-ACCT-RX -m mark --mark 0x0/0x3000 -m set --match-set fabric-acct-rx4-0 dst"));
  EXPECT_EQ(v4.find("10.1.0.5"), std::string::npos) << "no pod address in any rule";
  // The packet leaves with its destination's class: the RX chain ends by classifying again.
  EXPECT_TRUE(v4.find("-A FABRIC-ACCT-RX -j FABRIC-ACCT-DST\n") > v4.find("fabric-acct-rx4-2"));
  EXPECT_TRUE(
      has_line(v4, "-A FABRIC-ACCT-TX -m comment --comment \"" + plan_comment(plan.hash) + "\""));
  EXPECT_TRUE(plan.v6.restore.empty()) << "no pod has an IPv6 address";
  EXPECT_EQ(plan.v4.rules_per_chain.at("FABRIC-ACCT-TX"), 6u)
      << "comment, loopback, classify, three classes";
  ASSERT_EQ(plan.sets.size(), 6u) << "3 classes x 2 directions";
  EXPECT_EQ(plan.sets[0].name, "fabric-acct-tx4-0");
  EXPECT_EQ(plan.sets[0].traffic_class, "external");
  EXPECT_EQ(plan.sets[1].direction, "rx");
  ASSERT_EQ(plan.members(AF_INET).size(), 1u);
  EXPECT_EQ(plan.members(AF_INET)[0].text(), "10.1.0.5/32");
}

TEST(AccountingRules, EachFamilyGetsOnlyItsAddressesAndSets) {
  auto plan = plan_accounting(
      classes(), 0x3000,
      {pod("a", "v4only", {"10.1.0.5"}), pod("a", "dual", {"10.1.0.6", "fd00::6"})});
  EXPECT_FALSE(plan.v6.restore.empty());
  EXPECT_TRUE(has_line(plan.v6.restore,
                       "-A FABRIC-ACCT-DST -d fd00::/8 -j MARK --set-xmark 0x2000/0x3000"));
  EXPECT_EQ(plan.v6.restore.find("10.0.0.0/8"), std::string::npos);
  EXPECT_NE(plan.v6.restore.find("fabric-acct-tx6-1 src"), std::string::npos);
  EXPECT_EQ(plan.v6.restore.find("fabric-acct-tx4-"), std::string::npos);
  EXPECT_EQ(plan.sets.size(), 12u) << "3 classes x 2 directions x 2 families";
  EXPECT_EQ(plan.members(AF_INET).size(), 2u);
  ASSERT_EQ(plan.members(AF_INET6).size(), 1u);
  EXPECT_EQ(plan.pod_of.at(*parse_host("fd00::6")), 1u) << "the dual-stack pod";
}

TEST(AccountingRules, SetNamesFitTheKernelLimit) {
  EXPECT_EQ(ipset_name("tx", AF_INET6, 15), "fabric-acct-tx6-15");
  EXPECT_LE(ipset_name("rx", AF_INET6, 255).size(), 31u) << "IPSET_MAXNAMELEN";
}

TEST(AccountingRules, TheRulesAndTheirHashDoNotDependOnThePods) {
  auto a = plan_accounting(classes(), 0x3000, {pod("ns", "p", {"10.1.0.5"})});
  auto b = plan_accounting(classes(), 0x3000,
                           {pod("ns", "p", {"10.1.0.6"}), pod("ns", "q", {"10.1.0.7"})});
  EXPECT_EQ(a.hash, b.hash) << "pods come and go as set elements, not as rules";
  EXPECT_EQ(a.v4.restore, b.v4.restore);
  EXPECT_NE(a.hash, plan_accounting(classes(), 0xc00000, {pod("ns", "p", {"10.1.0.5"})}).hash);
  EXPECT_NE(a.hash, plan_accounting(classes(), 0x3000, {pod("ns", "p", {"fd00::5"})}).hash)
      << "another family";
  EXPECT_TRUE(plan_accounting(classes(), 0x3000, {}).v4.restore.empty()) << "no pods, no rules";
}

TEST(AccountingRules, JumpRulesCarryTheComment) {
  EXPECT_EQ(jump_rule_spec(kJumps[0]),
            "-m comment --comment \"fabric-exporter per-pod accounting\" -j FABRIC-ACCT-TX");
}

class PodRecordsTest : public ::testing::Test {
protected:
  void SetUp() override {
    char dir[] = "/tmp/fabric-pods-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    fs::create_directories(dir_ + "/state/networks/roce");
    fs::create_directories(dir_ + "/state/networks/other");
    fs::create_directories(dir_ + "/pods");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& path, const std::string& text) {
    ASSERT_TRUE(write_file_atomic(dir_ + "/" + path, text).ok());
  }
  // A fabric-cni record whose RoCE interface has 10.200.0.9/16 and whose eth0 has
  // `primary_ip` ("" for a record written before primary addresses were recorded).
  static std::string cni_record(const std::string& ns, const std::string& name,
                                const std::string& primary_ip,
                                const std::string& netns = "/var/run/netns/x") {
    const std::string primary =
        primary_ip.empty() ? "" : R"(,"primary":{"ifname":"eth0","ips":[")" + primary_ip + R"("]})";
    return R"({"schema_version":1,"network":"roce","container_id":"c","ifname":"net1","netns":")" +
           netns + R"(","pod":{"namespace":")" + ns + R"(","name":")" + name +
           R"(","uid":"u"},"mode":"shared","cni_version":"1.0.0","parent":{"netdev":"v","rdma_device":"","rdma_port":1,"pci_address":""},"mac":"02:00:00:00:00:01","mtu":1500,"ips":["10.200.0.9/16"])" +
           primary + R"(,"netconf":"{}"})";
  }
  std::string dir_;
};

TEST_F(PodRecordsTest, MergesCniAttachmentsAndPodRecordsByPodOnTheirPrimaryAddresses) {
  write("state/networks/roce/c1:net1.json", cni_record("train", "w0", "10.10.0.5/16"));
  write("state/networks/other/c1:net2.json", cni_record("train", "w0", "10.20.0.5/24"));
  write("state/networks/roce/c2:net1.json", cni_record("train", "w1", "10.10.0.6/16"));
  write("state/networks/roce/c4:net1.json", cni_record("train", "old", ""));
  write("state/networks/roce/c3:net1.json.tmp", "half");
  write("pods/w0.json",
        R"({"schema_version":1,"pod":{"namespace":"train","name":"w0"},"ips":["172.16.0.5"]})");
  write("pods/broken.json", R"({"schema_version":1,"pod":{"namespace":"x"}})");
  auto records = read_pod_records(dir_ + "/state", dir_ + "/pods");
  ASSERT_TRUE(records.ok()) << records.error().message();
  ASSERT_EQ(records->pods.size(), 2u) << "a record without primary addresses counts no pod";
  EXPECT_EQ(records->pods[0].pod_name, "w0");
  ASSERT_EQ(records->pods[0].addresses.size(), 3u) << "never the RoCE interface's 10.200.0.9";
  EXPECT_EQ(records->pods[0].addresses[0].text(), "10.10.0.5/32") << "the host, not the subnet";
  EXPECT_EQ(records->pods[1].pod_name, "w1");
  ASSERT_EQ(records->skipped.size(), 1u);
  EXPECT_NE(records->skipped[0].find("broken.json"), std::string::npos);
}

TEST_F(PodRecordsTest, HostileFilesAreSkippedNotFatal) {
  write("state/networks/roce/big.json", std::string(70 * 1024, ' '));
  write("state/networks/roce/bad-ip.json", cni_record("ns", "p", "300.1.1.1/24"));
  write("state/networks/roce/ok.json", cni_record("ns", "ok", "10.0.0.9/24"));
  auto records = read_pod_records(dir_ + "/state", "");
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->pods.size(), 1u);
  EXPECT_EQ(records->pods[0].pod_name, "ok");
  EXPECT_EQ(records->skipped.size(), 2u);
}

TEST_F(PodRecordsTest, AMissingStateDirectoryMeansNoPods) {
  auto records = read_pod_records(dir_ + "/nothing", "");
  ASSERT_TRUE(records.ok());
  EXPECT_TRUE(records->pods.empty());
}

TEST(MarkConflicts, FindsTheBitsEachToolUses) {
  // kube-proxy
  EXPECT_EQ(mark_bits_of_rule("-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000"), 0x4000u);
  EXPECT_EQ(mark_bits_of_rule("-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN"),
            0x4000u);
  EXPECT_EQ(mark_bits_of_rule("-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000"), 0x4000u);
  // Calico and Cilium
  EXPECT_EQ(mark_bits_of_rule("-A cali-fw -m mark --mark 0x10000/0x10000 -j RETURN"), 0x10000u);
  EXPECT_EQ(mark_bits_of_rule("-A CILIUM_PRE_mangle -m socket --transparent -m mark ! --mark "
                              "0xe00/0xf00 -j MARK --set-xmark 0x200/0xffffffff"),
            0xffffffffu);
  // Istio and CONNMARK
  EXPECT_EQ(mark_bits_of_rule("-A ztunnel-FORWARD -m mark --mark 0x220/0x220 -j CONNMARK "
                              "--save-mark --nfmask 0x220 --ctmask 0x220"),
            0x220u);
  EXPECT_EQ(mark_bits_of_rule("-A OUTPUT -m mark --mark 0x539 -j RETURN"), 0xffffffffu)
      << "a value without a mask tests every bit";
  EXPECT_EQ(
      mark_bits_of_rule("-A INPUT -m comment --comment \"--mark 0x1 in a comment\" -j ACCEPT"), 0u);
  EXPECT_EQ(mark_bits_of_rule("-A X -j MARK --and-mark 0xffffcfff"), 0x3000u);
}

TEST(SavedTable, SplitsOurChainsJumpsAndTheRest) {
  auto t = parse_saved_table(R"(*filter
:INPUT ACCEPT [0:0]
-A INPUT -j ACCEPT
COMMIT
*mangle
:PREROUTING ACCEPT [0:0]
:FABRIC-ACCT-TX - [0:0]
-A PREROUTING -m comment --comment "fabric-exporter per-pod accounting" -j FABRIC-ACCT-TX
-A PREROUTING -j KUBE-MARK
-A FABRIC-ACCT-TX -j FABRIC-ACCT-DST
COMMIT
)",
                             "mangle");
  EXPECT_EQ(t.our_chains, std::vector<std::string>{"FABRIC-ACCT-TX"});
  EXPECT_EQ(t.our_rules, std::vector<std::string>{"-A FABRIC-ACCT-TX -j FABRIC-ACCT-DST"});
  ASSERT_EQ(t.jump_rules.size(), 1u);
  EXPECT_EQ(t.other_rules, std::vector<std::string>{"-A PREROUTING -j KUBE-MARK"});
}

// A jump is misplaced behind a rule that may end the walk of its chain (an accept, or a
// jump into a chain that may accept, as Calico's), not behind one that only marks.
TEST(SavedTable, FindsJumpsBehindARuleThatMayAcceptFirst) {
  const std::string jump_tx =
      R"(-A PREROUTING -m comment --comment "fabric-exporter per-pod accounting" -j FABRIC-ACCT-TX)";
  const std::string jump_rx =
      R"(-A POSTROUTING -m comment --comment "fabric-exporter per-pod accounting" -j FABRIC-ACCT-RX)";
  auto t = parse_saved_table("*mangle\n"
                             "-A PREROUTING -m comment --comment \"cali:6gwbT8clXdHdC1b1\" -j "
                             "cali-PREROUTING\n" +
                                 jump_tx +
                                 "\n"
                                 "-A POSTROUTING -j MARK --set-xmark 0x100/0x100\n" +
                                 jump_rx + "\nCOMMIT\n",
                             "mangle");
  EXPECT_EQ(t.jump_rules.size(), 2u);
  EXPECT_EQ(t.misplaced_jumps, std::vector<std::string>{jump_tx});
}

} // namespace
} // namespace fabric::exporters
