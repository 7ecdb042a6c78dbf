// Rule generation for per-pod accounting, and the pod records it starts from.
#include <sys/socket.h>

#include <filesystem>

#include <sys/stat.h>

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

TEST(AccountingRules, ClassifyInOneLookupThenFindThePodInOneSetLookup) {
  auto plan = plan_accounting(classes(), 0x3000, {pod("train", "worker-0", {"10.1.0.5"})});
  const std::string& v4 = plan.v4.restore;
  ASSERT_TRUE(v4.starts_with("*mangle\n")) << v4;
  ASSERT_TRUE(v4.ends_with("COMMIT\n"));
  // Reset to external, then the class map sets the destination's class.
  const auto reset = v4.find("-A FABRIC-ACCT-TX -j MARK --set-xmark 0x0/0x3000\n");
  const auto classify =
      v4.find("-A FABRIC-ACCT-TX -j SET --map-set fabric-acct-class4 dst --map-mark\n");
  ASSERT_NE(reset, std::string::npos) << v4;
  ASSERT_NE(classify, std::string::npos) << v4;
  EXPECT_LT(reset, classify);
  EXPECT_TRUE(has_line(v4, "-A FABRIC-ACCT-RX -j SET --map-set fabric-acct-class4 src --map-mark"));
  EXPECT_EQ(v4.find("10.0.0.0/8"), std::string::npos) << "networks are set elements, not rules";
  // One rule per class and direction, whatever the number of pods: the mark picks the
  // class's set, the set finds the pod.
  EXPECT_TRUE(has_line(
      v4,
      "-A FABRIC-ACCT-TX -m mark --mark 0x2000/0x3000 -m set --match-set fabric-acct-tx4-2 src"));
  EXPECT_TRUE(has_line(
      v4, "-A FABRIC-ACCT-RX -m mark --mark 0x0/0x3000 -m set --match-set fabric-acct-rx4-0 dst"));
  EXPECT_EQ(v4.find("10.1.0.5"), std::string::npos) << "no pod address in any rule";
  // The packet leaves with its destination's class: the RX chain ends by classifying again.
  EXPECT_TRUE(v4.ends_with("-A FABRIC-ACCT-RX -j SET --map-set fabric-acct-class4 dst "
                           "--map-mark\nCOMMIT\n"))
      << v4;
  // The plan's hash rides on the loopback rule, which every packet passes anyway.
  EXPECT_TRUE(has_line(v4, "-A FABRIC-ACCT-TX -i lo -m comment --comment \"" +
                               plan_comment(plan.hash) + "\" -j RETURN"))
      << v4;
  EXPECT_TRUE(plan.v6.restore.empty()) << "no pod has an IPv6 address";
  EXPECT_EQ(plan.v4.rules_per_chain.at("FABRIC-ACCT-TX"), 6u)
      << "loopback, reset, classify, three classes";
  EXPECT_EQ(plan.v4.rules_per_chain.size(), 2u) << "no other chain";
  ASSERT_EQ(plan.sets.size(), 6u) << "3 classes x 2 directions";
  EXPECT_EQ(plan.sets[0].name, "fabric-acct-tx4-0");
  EXPECT_EQ(plan.sets[0].traffic_class, "external");
  EXPECT_EQ(plan.sets[1].direction, "rx");
  ASSERT_EQ(plan.members(AF_INET).size(), 1u);
  EXPECT_EQ(plan.members(AF_INET)[0].text(), "10.1.0.5/32");
  ASSERT_EQ(plan.class_maps.size(), 1u);
  EXPECT_EQ(plan.class_maps[0].name, "fabric-acct-class4");
  ASSERT_EQ(plan.class_maps[0].networks.size(), 2u);
  EXPECT_EQ(plan.class_maps[0].networks[0], (ClassNetwork{*parse_network("10.0.0.0/8"), 0x2000}));
  EXPECT_EQ(plan.class_maps[0].networks[1], (ClassNetwork{*parse_network("10.96.0.0/12"), 0x1000}));
}

// However many networks the classes name, a packet passes the same rules: the chains grow
// only by one mark test per class.
TEST(AccountingRules, TheChainsDoNotGrowWithTheClassesNetworks) {
  std::vector<TrafficClass> many{{"a", {}}, {"b", {}}, {"c", {}}};
  for (int i = 0; i < 200; ++i) {
    many[static_cast<std::size_t>(i % 3)].networks.push_back(
        *parse_network("10." + std::to_string(i) + ".0.0/16"));
  }
  std::vector<TrafficClass> few{{"a", {*parse_network("10.0.0.0/16")}},
                                {"b", {*parse_network("10.1.0.0/16")}},
                                {"c", {*parse_network("10.2.0.0/16")}}};
  const auto pods = std::vector{pod("ns", "p", {"10.1.0.5"})};
  auto big = plan_accounting(many, 0x7000, pods);
  auto small = plan_accounting(few, 0x7000, pods);
  EXPECT_EQ(big.v4.rules_per_chain, small.v4.rules_per_chain);
  EXPECT_EQ(big.hash, small.hash) << "a change of networks changes elements, not rules";
  EXPECT_EQ(big.v4.rules_per_chain.at("FABRIC-ACCT-TX"), 3u + 4u) << "3 + classes and external";
  EXPECT_EQ(big.v4.rules_per_chain.at("FABRIC-ACCT-RX"), 5u + 4u);
  EXPECT_EQ(big.class_maps[0].networks.size(), 200u);
}

// The first class that contains an address wins, as configured; a hash:net set answers
// with the most specific prefix instead, so what a later class names inside an earlier
// class's network is left out of the map.
TEST(AccountingRules, TheClassMapResolvesOverlapsInConfiguredOrder) {
  const std::vector<TrafficClass> overlapping{
      {"gpu", {*parse_network("10.1.0.0/16"), *parse_network("10.1.5.0/24")}},
      {"cluster", {*parse_network("10.0.0.0/8"), *parse_network("10.1.2.0/24")}},
      {"dup", {*parse_network("10.0.0.0/8"), *parse_network("192.168.0.0/16")}},
      {"all", {*parse_network("0.0.0.0/0"), *parse_network("fd00::/8")}}};
  auto v4 = class_networks(overlapping, 0x7000, AF_INET);
  std::vector<std::string> got;
  for (const auto& n : v4)
    got.push_back(n.network.text() + "=" + std::to_string(n.mark >> 12));
  // gpu's /16 is more specific than cluster's /8 and wins inside it; cluster's /24 and
  // gpu's own /24 lie inside gpu's /16 and go; dup's /8 is cluster's; /0 is two halves.
  EXPECT_EQ(got, (std::vector<std::string>{"0.0.0.0/1=4", "10.0.0.0/8=2", "10.1.0.0/16=1",
                                           "128.0.0.0/1=4", "192.168.0.0/16=3"}));
  auto v6 = class_networks(overlapping, 0x7000, AF_INET6);
  ASSERT_EQ(v6.size(), 1u);
  EXPECT_EQ(v6[0].network.text(), "fd00::/8");
  EXPECT_TRUE(parse_network("10.0.0.0/8")->contains(*parse_network("10.255.0.0/16")));
  EXPECT_FALSE(parse_network("10.1.0.0/16")->contains(*parse_network("10.0.0.0/8")));
  EXPECT_FALSE(parse_network("10.1.128.0/17")->contains(*parse_network("10.1.0.0/24")));
  EXPECT_FALSE(parse_network("10.0.0.0/8")->contains(*parse_network("fd00::/8")));
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
  // A FIFO nobody writes: reading it would block every scrape that lists the records.
  write("pods/keep.json",
        R"({"schema_version":1,"pod":{"namespace":"train","name":"w0"},"ips":["172.16.0.5"]})");
  ASSERT_EQ(::mkfifo((dir_ + "/pods/stuck.json").c_str(), 0644), 0);
  auto records = read_pod_records(dir_ + "/state", dir_ + "/pods");
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->pods.size(), 2u);
  EXPECT_EQ(records->pods[0].pod_name, "ok");
  EXPECT_EQ(records->pods[1].pod_name, "w0");
  ASSERT_EQ(records->skipped.size(), 3u);
  EXPECT_NE(records->skipped[2].find("stuck.json"), std::string::npos) << records->skipped[2];
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
