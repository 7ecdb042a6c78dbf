// fabric-probe lint: every rule's verdicts over LintInputs built here, the collector over
// a sysfs/configfs fixture with fakes for verbs and DCB, and the report's shapes.
//
// The fixture (tests/data/probe/lint, a root standing for "/"): mlx5_0 on eth0 (MTU 9000)
// with a VLAN upper eth0.100 whose address has only a RoCE v1 GID, and a pod's macvlan
// mv0 (in another namespace) in its GID table; rxe0 on eth1 (MTU 1500); mlx5_2, an
// InfiniBand port. RDMA-CM configfs says RoCE v2 for mlx5_0 and RoCE v1 for rxe0.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/strings.h"
#include "probes/lint/lint.h"
#include "probes/lint/lint_collect.h"
#include "probes/lint/lint_report.h"
#include "tests/unit/fake_dcb_device.h"

namespace fabric::probes {
namespace {

namespace fs = std::filesystem;
using pfc::dscp;
using rdma::GidEntry;
using rdma::GidType;
using rdma::NetnsMode;

const std::string kFixture = FABRIC_TEST_DATA_DIR "/probe/lint";

GidEntry gid(uint32_t index, const std::string& ipv4, GidType type, const std::string& netdev) {
  GidEntry g;
  g.index = index;
  g.gid = "::ffff:" + ipv4;
  g.ipv4 = ipv4;
  g.type = type;
  g.netdev = netdev;
  return g;
}

// GPU0 and mlx5_0 behind one PCIe switch.
GpuNicInputs gpu_beside_nic() {
  auto function = [](uint32_t port, uint32_t bus) {
    topo::PciFunction f;
    f.host_bridge = "pci0000:00";
    f.chain = {{0, 0, 1, 0}, {0, 1, 0, 0}, {0, 2, port, 0}, {0, bus, 0, 0}};
    f.address = f.chain.back();
    return f;
  };
  GpuNicInputs in;
  topo::Gpu gpu;
  gpu.name = "GPU0";
  gpu.pci = function(8, 3);
  gpu.address = gpu.pci->address;
  topo::RdmaNic nic;
  nic.name = "NIC0";
  nic.rdma_device = "mlx5_0";
  nic.pci = function(16, 4);
  in.node.gpus.push_back(gpu);
  in.node.nics.push_back(nic);
  in.gpus = {0};
  in.nics = {0};
  in.gpus_from = "every GPU";
  in.nics_from = "every RDMA NIC";
  return in;
}

// One RoCE port on eth0 (MTU 1500, active 1024) with the RoCE v2 GID for 10.0.0.1, and a
// GPU beside its NIC.
LintInputs healthy_node() {
  LintInputs in;
  LintPort p;
  p.device = "mlx5_0";
  p.port = 1;
  p.link_layer = "Ethernet";
  p.netdev = "eth0";
  p.netdev_mtu = 1500u;
  p.active_mtu = 1024u;
  p.max_mtu = 4096;
  p.gids = {gid(2, "10.0.0.1", GidType::kRoceV1, "eth0"),
            gid(3, "10.0.0.1", GidType::kRoceV2, "eth0")};
  p.netdevs = {"eth0"};
  in.ports.push_back(p);
  in.ipv4["eth0"] = {"10.0.0.1"};
  pfc::DcbState dcb = pfc::mlx5_defaults();
  dcb.pfc->pfc_en = 1 << 3;
  dcb.apps = {dscp(26, 3), dscp(48, 6)};
  in.dcb.emplace("eth0", dcb);
  in.cm_roce_mode.emplace("mlx5_0", std::optional<std::string>("RoCE v2"));
  in.memlock = MemlockLimit{};
  in.netns_mode = NetnsMode::kShared;
  in.gpu_nic = gpu_beside_nic();
  return in;
}

const LintCheck* find(const std::vector<LintCheck>& checks, const std::string& id,
                      const std::string& subject = "") {
  for (const auto& c : checks) {
    if (c.id == id && (subject.empty() || c.subject == subject)) return &c;
  }
  return nullptr;
}

std::string dump(const std::vector<LintCheck>& checks) {
  return render_lint_text(checks);
}

#define EXPECT_MENTIONS(check, text)                                                               \
  EXPECT_NE((check).message.find(text), std::string::npos) << (check).message

TEST(Lint, HealthyNodePassesEveryCheck) {
  auto checks = run_lint(healthy_node(), LintOptions{});
  for (const char* id : {"roce_ports", "mtu_match", "roce_v2_gid", "pfc_on_roce_priority",
                         "rdma_cm_roce_mode", "memlock", "rdma_netns_mode", "gpu_nic_distance"}) {
    const LintCheck* c = find(checks, id);
    ASSERT_NE(c, nullptr) << id << "\n" << dump(checks);
    EXPECT_EQ(c->verdict, Verdict::kPass) << id << ": " << c->message;
  }
  EXPECT_EQ(checks.size(), 8u) << dump(checks);
  EXPECT_EQ(lint_exit_status(checks), kExitOk);
}

// --- mtu_match ---

TEST(LintMtu, ExpectedMtuIsTheKernelsDerivation) {
  EXPECT_EQ(expected_roce_mtu(1500, 4096), 1024u);
  EXPECT_EQ(expected_roce_mtu(9000, 4096), 4096u);
  EXPECT_EQ(expected_roce_mtu(9000, 1024), 1024u); // capped by the port
  EXPECT_EQ(expected_roce_mtu(4192, std::nullopt), 4096u);
  EXPECT_EQ(expected_roce_mtu(4191, std::nullopt), 2048u);
  EXPECT_EQ(expected_roce_mtu(352, std::nullopt), 256u);
  EXPECT_EQ(expected_roce_mtu(300, std::nullopt), 0u);
}

TEST(LintMtu, ActiveMatchingTheNetdevPasses) {
  auto checks = check_mtu(healthy_node());
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kPass);
  EXPECT_EQ(checks[0].subject, "mlx5_0/1 eth0");
  EXPECT_MENTIONS(checks[0], "RoCE active MTU 1024, eth0 MTU 1500");
}

TEST(LintMtu, JumboNetdevWithSmallRoceMtuWarns) {
  auto in = healthy_node();
  in.ports[0].netdev_mtu = 9000u;
  auto checks = check_mtu(in);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kWarn);
  EXPECT_MENTIONS(checks[0], "expected 4096");
}

TEST(LintMtu, RoceMtuTooBigForTheNetdevFails) {
  auto in = healthy_node();
  in.ports[0].active_mtu = 4096u;
  in.ports[0].netdev_mtu = 4150u; // 4096 + 96 header bytes do not fit
  auto checks = check_mtu(in);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kFail);
  EXPECT_MENTIONS(checks[0], "at least 4192");
  EXPECT_EQ(lint_exit_status(checks), kExitBelowThreshold);
}

TEST(LintMtu, UnreadableMtuIsUnknown) {
  auto in = healthy_node();
  in.ports[0].active_mtu = Error(ErrorCode::kNotBuilt, "libibverbs", "not built");
  auto checks = check_mtu(in);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(checks[0], "active MTU not readable");

  in = healthy_node();
  in.ports[0].netdev_mtu = Error(ErrorCode::kNotFound, "netdev eth0", "not here");
  checks = check_mtu(in);
  EXPECT_EQ(checks[0].verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(checks[0], "netdev MTU not readable");
}

TEST(LintMtu, InfinibandPortsAreNotChecked) {
  auto in = healthy_node();
  in.ports[0].link_layer = "InfiniBand";
  EXPECT_TRUE(check_mtu(in).empty());
  auto ports = check_roce_ports(in);
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0].verdict, Verdict::kFail);
  EXPECT_MENTIONS(ports[0], "no RDMA port with an Ethernet link layer");
}

TEST(LintPorts, NoRdmaDeviceFails) {
  LintInputs in;
  auto checks = check_roce_ports(in);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kFail);
  EXPECT_MENTIONS(checks[0], "no RDMA device");
}

// --- roce_v2_gid ---

TEST(LintGid, EveryAddressWithItsV2GidPasses) {
  auto in = healthy_node();
  in.ports[0].netdevs.push_back("eth0.100");
  in.ports[0].gids.push_back(gid(7, "10.100.0.1", GidType::kRoceV2, "eth0.100"));
  in.ipv4["eth0.100"] = {"10.100.0.1"};
  auto checks = check_roce_v2_gids(in);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].verdict, Verdict::kPass);
  EXPECT_EQ(checks[0].subject, "eth0 10.0.0.1");
  EXPECT_MENTIONS(checks[0], "index 3 ::ffff:10.0.0.1 on mlx5_0 port 1");
  EXPECT_EQ(checks[1].verdict, Verdict::kPass);
  EXPECT_EQ(checks[1].subject, "eth0.100 10.100.0.1");
}

TEST(LintGid, AddressWithoutGidFails) {
  auto in = healthy_node();
  in.ipv4["eth0"].push_back("10.0.0.2");
  auto checks = check_roce_v2_gids(in);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[1].verdict, Verdict::kFail);
  EXPECT_EQ(checks[1].subject, "eth0 10.0.0.2");
  EXPECT_MENTIONS(checks[1], "no GID ::ffff:10.0.0.2");
}

TEST(LintGid, RoceV1OnlyFails) {
  auto in = healthy_node();
  in.ports[0].gids.pop_back(); // leaves the v1 entry
  auto checks = check_roce_v2_gids(in);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kFail);
  EXPECT_MENTIONS(checks[0], "only a RoCE v1 GID");
}

TEST(LintGid, GidOnAnotherNetdevFails) {
  auto in = healthy_node();
  in.ports[0].netdevs.push_back("mv1");
  in.ipv4["mv1"] = {"10.0.0.1"}; // same address on an upper, GID only for eth0
  auto checks = check_roce_v2_gids(in);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[1].verdict, Verdict::kFail);
  EXPECT_EQ(checks[1].subject, "mv1 10.0.0.1");
  EXPECT_MENTIONS(checks[1], "belongs to netdev eth0, not mv1");
}

TEST(LintGid, NoAddressAtAllWarns) {
  auto in = healthy_node();
  in.ipv4.clear();
  auto checks = check_roce_v2_gids(in);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kWarn);
  EXPECT_MENTIONS(checks[0], "no IPv4 address on eth0");
}

// --- pfc_on_roce_priority ---

TEST(LintPfc, DscpMappedToALosslessPriorityPasses) {
  auto checks = check_pfc(healthy_node(), 26);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kPass);
  EXPECT_EQ(checks[0].subject, "eth0");
  EXPECT_MENTIONS(checks[0], "DSCP 26 -> priority 3");
}

TEST(LintPfc, PfcOffOnTheMappedPriorityFails) {
  auto in = healthy_node();
  in.dcb.at("eth0")->pfc->pfc_en = 1 << 4;
  auto checks = check_pfc(in, 26);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kFail);
  EXPECT_MENTIONS(checks[0], "PFC is off on priority 3");
  EXPECT_MENTIONS(checks[0], "--prio-pfc 3:on");
}

TEST(LintPfc, OtherDscpFollowsItsOwnMapping) {
  auto in = healthy_node(); // 48 -> 6, PFC only on 3
  auto checks = check_pfc(in, 48);
  EXPECT_EQ(checks[0].verdict, Verdict::kFail);
  EXPECT_MENTIONS(checks[0], "DSCP 48 -> priority 6");
}

TEST(LintPfc, NoDscpTrustWithLosslessPriorityZeroWarns) {
  auto in = healthy_node();
  in.dcb.at("eth0")->apps.clear();
  in.dcb.at("eth0")->pfc->pfc_en = 1 << 0;
  auto checks = check_pfc(in, 26);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kWarn);
  EXPECT_MENTIONS(checks[0], "does not trust DSCP");
  EXPECT_MENTIONS(checks[0], "priority 0");
}

TEST(LintPfc, NoDscpTrustWithLossyPriorityZeroFails) {
  auto in = healthy_node();
  in.dcb.at("eth0")->apps.clear(); // PFC on 3 only
  auto checks = check_pfc(in, 26);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kFail);
  EXPECT_MENTIONS(checks[0], "--dscp-prio 26:PRIO");
}

TEST(LintPfc, DscpTrustedButThisValueUnmappedSaysSo) {
  auto in = healthy_node();
  in.dcb.at("eth0")->apps = {dscp(48, 6)};
  auto checks = check_pfc(in, 26);
  EXPECT_EQ(checks[0].verdict, Verdict::kFail);
  EXPECT_MENTIONS(checks[0], "maps other DSCP values but not 26");
}

TEST(LintPfc, NoDcbSupportIsUnknownNotFail) {
  auto in = healthy_node();
  in.dcb.erase("eth0");
  in.dcb.emplace("eth0", Error::from_errno(EOPNOTSUPP, "DCB_CMD_IEEE_GET"));
  auto checks = check_pfc(in, 26);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(checks[0], "no DCB support");
  EXPECT_EQ(lint_exit_status(checks), kExitOk);
}

TEST(LintPfc, OtherReadErrorsAndMissingPfcAreUnknown) {
  auto in = healthy_node();
  in.dcb.erase("eth0");
  in.dcb.emplace("eth0", Error::from_errno(EPERM, "DCB_CMD_IEEE_GET"));
  auto checks = check_pfc(in, 26);
  EXPECT_EQ(checks[0].verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(checks[0], "DCB state not readable");

  in = healthy_node();
  in.dcb.at("eth0")->pfc.reset();
  checks = check_pfc(in, 26);
  EXPECT_EQ(checks[0].verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(checks[0], "no PFC configuration");
}

// --- memlock ---

TEST(LintMemlock, UnlimitedAndLargeEnoughPass) {
  EXPECT_EQ(check_memlock(MemlockLimit{}, kDefaultMinMemlock).verdict, Verdict::kPass);
  auto c = check_memlock(MemlockLimit{64ull << 20, 64ull << 20}, kDefaultMinMemlock);
  EXPECT_EQ(c.verdict, Verdict::kPass);
  EXPECT_EQ(c.id, "memlock");
}

TEST(LintMemlock, KernelDefaultFailsWithTheFix) {
  auto c = check_memlock(MemlockLimit{8ull << 20, 8ull << 20}, kDefaultMinMemlock);
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_MENTIONS(c, "ulimit -l unlimited");
  EXPECT_MENTIONS(c, "soft 8 MiB");
  EXPECT_MENTIONS(c, "only root can raise it");

  // A soft limit below with room under the hard one: same verdict, no root needed.
  c = check_memlock(MemlockLimit{64 << 10, std::nullopt}, kDefaultMinMemlock);
  EXPECT_EQ(c.verdict, Verdict::kFail);
  EXPECT_EQ(c.message.find("only root"), std::string::npos) << c.message;
}

TEST(LintMemlock, ThresholdIsAnOption) {
  MemlockLimit eight_mib{8ull << 20, 8ull << 20};
  EXPECT_EQ(check_memlock(eight_mib, 8ull << 20).verdict, Verdict::kPass);
  EXPECT_EQ(check_memlock(Error(ErrorCode::kSystem, "getrlimit"), 1).verdict, Verdict::kUnknown);
}

// --- rdma_netns_mode ---

TEST(LintNetns, ModeIsReportedAndComparedWhenExpected) {
  auto c = check_netns_mode(NetnsMode::kShared, std::nullopt);
  EXPECT_EQ(c.verdict, Verdict::kPass);
  EXPECT_MENTIONS(c, "RDMA netns mode shared");
  EXPECT_EQ(check_netns_mode(NetnsMode::kExclusive, NetnsMode::kExclusive).verdict, Verdict::kPass);
  c = check_netns_mode(NetnsMode::kShared, NetnsMode::kExclusive);
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_MENTIONS(c, "expected exclusive");
  EXPECT_MENTIONS(c, "rdma system set netns exclusive");
}

TEST(LintNetns, UnreadableModeIsUnknown) {
  auto c = check_netns_mode(Error::from_errno(EPROTONOSUPPORT, "socket(NETLINK_RDMA)"),
                            NetnsMode::kShared);
  EXPECT_EQ(c.verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(c, "NETLINK_RDMA");
}

// --- rdma_cm_roce_mode ---

TEST(LintCm, RoceModes) {
  auto in = healthy_node();
  in.cm_roce_mode.clear();
  in.cm_roce_mode.emplace("a", std::optional<std::string>("RoCE v2"));
  in.cm_roce_mode.emplace("b", std::optional<std::string>("IB/RoCE v1"));
  in.cm_roce_mode.emplace("c", std::optional<std::string>());
  in.cm_roce_mode.emplace("d", Error::from_errno(EPERM, "creating the RDMA-CM configfs folder"));
  auto checks = check_cm_roce_mode(in);
  ASSERT_EQ(checks.size(), 4u);
  EXPECT_EQ(find(checks, "rdma_cm_roce_mode", "a")->verdict, Verdict::kPass);
  const LintCheck* v1 = find(checks, "rdma_cm_roce_mode", "b");
  EXPECT_EQ(v1->verdict, Verdict::kFail);
  EXPECT_MENTIONS(*v1, "echo 'RoCE v2' > /sys/kernel/config/rdma_cm/b/ports/1/default_roce_mode");
  const LintCheck* none = find(checks, "rdma_cm_roce_mode", "c");
  EXPECT_EQ(none->verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(*none, "configfs not available");
  EXPECT_EQ(find(checks, "rdma_cm_roce_mode", "d")->verdict, Verdict::kUnknown);
}

// --- the collector over the fixture ---

// Verbs' view of the fixture's ports.
class FakeDeviceSource : public DeviceSource {
public:
  Result<std::vector<DeviceInfo>> list_devices() override {
    ++calls;
    if (error) return *error;
    auto device = [](const std::string& name, uint32_t active) {
      DeviceInfo d;
      d.name = name;
      rdma::PortInfo p;
      p.number = 1;
      p.active_mtu = active;
      p.max_mtu = 4096;
      d.ports.push_back(p);
      return d;
    };
    return std::vector<DeviceInfo>{device("mlx5_0", 1024), device("rxe0", 1024),
                                   device("mlx5_2", 4096)};
  }
  int calls = 0;
  std::optional<Error> error;
};

class LintCollect : public ::testing::Test {
protected:
  void SetUp() override {
    pfc::DcbState state = pfc::mlx5_defaults();
    state.pfc->pfc_en = 1 << 3;
    state.apps = {dscp(26, 3)};
    dcb_.add("eth0", state);
    dcb_.add_without_dcb("eth1");
    sources_.root = kFixture;
    sources_.devices = &verbs_;
    sources_.dcb = &dcb_;
    sources_.ipv4_addresses = [] {
      return Result<Ipv4ByNetdev>(Ipv4ByNetdev{{"lo", {"127.0.0.1"}},
                                               {"eth0", {"10.0.0.1"}},
                                               {"eth0.100", {"10.100.0.1"}},
                                               {"eth1", {"10.0.1.1"}}});
    };
    sources_.memlock = [] { return Result<MemlockLimit>(MemlockLimit{8ull << 20, 8ull << 20}); };
    sources_.netns_mode = [] { return Result<NetnsMode>(NetnsMode::kShared); };
  }

  const LintPort& port(const LintInputs& in, const std::string& device) {
    for (const auto& p : in.ports) {
      if (p.device == device) return p;
    }
    ADD_FAILURE() << "no port of " << device;
    return in.ports.front();
  }

  FakeDeviceSource verbs_;
  pfc::FakeDcbDevice dcb_;
  LintSources sources_;
};

TEST_F(LintCollect, ReadsPortsNetdevsAndMtus) {
  auto in = collect_lint_inputs(sources_);
  ASSERT_TRUE(in.ok()) << in.error().message();
  ASSERT_EQ(in->ports.size(), 3u);
  const LintPort& mlx = port(*in, "mlx5_0");
  EXPECT_EQ(mlx.link_layer, "Ethernet");
  EXPECT_EQ(mlx.netdev, "eth0");
  ASSERT_TRUE(mlx.netdev_mtu.ok());
  EXPECT_EQ(*mlx.netdev_mtu, 9000u);
  ASSERT_TRUE(mlx.active_mtu.ok());
  EXPECT_EQ(*mlx.active_mtu, 1024u);
  EXPECT_EQ(mlx.gids.size(), 6u); // the all-zero slot is left out
  // mv0 lives in a pod's namespace: in the GID table, not in this namespace's sysfs.
  EXPECT_EQ(mlx.netdevs, (std::vector<std::string>{"eth0", "eth0.100"}));
  EXPECT_EQ(port(*in, "rxe0").netdev, "eth1");
  EXPECT_EQ(port(*in, "mlx5_2").link_layer, "InfiniBand");
  EXPECT_EQ(verbs_.calls, 1);
  // Only the RoCE netdevs' addresses are kept.
  EXPECT_EQ(in->ipv4.count("lo"), 0u);
  EXPECT_EQ(in->ipv4.at("eth0.100"), std::vector<std::string>{"10.100.0.1"});
}

TEST_F(LintCollect, DcbAndRdmaCmAreReadPerNetdevAndDevice) {
  auto in = collect_lint_inputs(sources_);
  ASSERT_TRUE(in.ok()) << in.error().message();
  EXPECT_EQ(dcb_.reads(), 2);
  ASSERT_TRUE(in->dcb.at("eth0").ok());
  ASSERT_FALSE(in->dcb.at("eth1").ok());
  EXPECT_EQ(in->dcb.at("eth1").error().code(), ErrorCode::kUnsupported);
  ASSERT_TRUE(in->cm_roce_mode.at("mlx5_0").ok());
  EXPECT_EQ(*in->cm_roce_mode.at("mlx5_0"), "RoCE v2");
  EXPECT_EQ(*in->cm_roce_mode.at("rxe0"), "IB/RoCE v1");
  EXPECT_EQ(in->cm_roce_mode.count("mlx5_2"), 0u); // InfiniBand: rdma_cm's RoCE mode is moot
}

TEST_F(LintCollect, FixtureVerdicts) {
  auto in = collect_lint_inputs(sources_);
  ASSERT_TRUE(in.ok()) << in.error().message();
  auto checks = run_lint(*in, LintOptions{});
  auto verdict = [&](const std::string& id, const std::string& subject) {
    const LintCheck* c = find(checks, id, subject);
    EXPECT_NE(c, nullptr) << id << " " << subject << "\n" << dump(checks);
    return c ? c->verdict : Verdict::kUnknown;
  };
  EXPECT_EQ(verdict("roce_ports", "node"), Verdict::kPass);
  EXPECT_EQ(verdict("mtu_match", "mlx5_0/1 eth0"), Verdict::kWarn); // 9000 vs 1024
  EXPECT_EQ(verdict("mtu_match", "rxe0/1 eth1"), Verdict::kPass);   // 1500 vs 1024
  EXPECT_EQ(verdict("roce_v2_gid", "eth0 10.0.0.1"), Verdict::kPass);
  EXPECT_EQ(verdict("roce_v2_gid", "eth0.100 10.100.0.1"), Verdict::kFail); // v1 only
  EXPECT_EQ(verdict("roce_v2_gid", "eth1 10.0.1.1"), Verdict::kPass);
  EXPECT_EQ(verdict("pfc_on_roce_priority", "eth0"), Verdict::kPass);
  EXPECT_EQ(verdict("pfc_on_roce_priority", "eth1"), Verdict::kUnknown);
  EXPECT_EQ(verdict("rdma_cm_roce_mode", "mlx5_0"), Verdict::kPass);
  EXPECT_EQ(verdict("rdma_cm_roce_mode", "rxe0"), Verdict::kFail);
  EXPECT_EQ(verdict("memlock", "node"), Verdict::kFail);
  EXPECT_EQ(verdict("rdma_netns_mode", "rdma"), Verdict::kPass);
  EXPECT_EQ(verdict("gpu_nic_distance", "node"), Verdict::kUnknown); // no GPU here
  EXPECT_EQ(checks.size(), 13u) << dump(checks);
  EXPECT_EQ(lint_exit_status(checks), kExitBelowThreshold);
}

TEST_F(LintCollect, DeviceRestriction) {
  auto in = collect_lint_inputs(sources_, {"rxe0", "rxe0"});
  ASSERT_TRUE(in.ok()) << in.error().message();
  ASSERT_EQ(in->ports.size(), 1u);
  EXPECT_EQ(in->ports[0].device, "rxe0");
  EXPECT_EQ(in->dcb.count("eth0"), 0u);

  auto missing = collect_lint_inputs(sources_, {"mlx5_9"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("have: mlx5_0, mlx5_2, rxe0"), std::string::npos)
      << missing.error().message();
}

TEST_F(LintCollect, VerbsFailureLeavesMtuUnknown) {
  verbs_.error = Error(ErrorCode::kNotBuilt, "libibverbs", "this build has no verbs");
  auto in = collect_lint_inputs(sources_);
  ASSERT_TRUE(in.ok()) << in.error().message();
  auto checks = check_mtu(*in);
  ASSERT_EQ(checks.size(), 2u);
  for (const auto& c : checks) {
    EXPECT_EQ(c.verdict, Verdict::kUnknown);
    EXPECT_MENTIONS(c, "this build has no verbs");
  }
}

TEST_F(LintCollect, WithoutConfigfsTheRoceModeIsUnknown) {
  // The fixture without sys/kernel/config: configfs not mounted.
  fs::path root = fs::temp_directory_path() / ("fabric-lint-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "sys");
  fs::copy(fs::path(kFixture) / "sys" / "class", root / "sys" / "class",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  sources_.root = root.string();
  auto in = collect_lint_inputs(sources_);
  fs::remove_all(root);
  ASSERT_TRUE(in.ok()) << in.error().message();
  ASSERT_TRUE(in->cm_roce_mode.at("rxe0").ok());
  EXPECT_FALSE(in->cm_roce_mode.at("rxe0")->has_value());
  auto checks = check_cm_roce_mode(*in);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].verdict, Verdict::kUnknown);
  EXPECT_MENTIONS(checks[0], "configfs not available");
}

TEST(LintCollectReal, MemlockIsGetrlimit) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_MEMLOCK, &limit), 0);
  auto m = read_memlock_limit();
  ASSERT_TRUE(m.ok());
  if (limit.rlim_cur == RLIM_INFINITY) {
    EXPECT_FALSE(m->soft.has_value());
  } else {
    EXPECT_EQ(m->soft, std::optional<uint64_t>(limit.rlim_cur));
  }
}

TEST(LintCollectReal, LoopbackHasItsAddress) {
  auto a = read_ipv4_addresses();
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(a->count("lo")) << "no IPv4 on lo";
  EXPECT_EQ(a->at("lo").front(), "127.0.0.1");
}

// --- report ---

TEST(LintReport, JsonShape) {
  auto in = healthy_node();
  in.memlock = MemlockLimit{1 << 20, 1 << 20};
  auto checks = run_lint(in, LintOptions{});
  auto doc = json::parse(render_lint_json(checks), "lint");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ((*doc)["schema_version"].GetInt(), 1);
  ASSERT_TRUE((*doc)["checks"].IsArray());
  ASSERT_EQ((*doc)["checks"].Size(), checks.size());
  const auto& first = (*doc)["checks"][0];
  EXPECT_STREQ(first["id"].GetString(), "roce_ports");
  EXPECT_STREQ(first["verdict"].GetString(), "pass");
  EXPECT_STREQ(first["subject"].GetString(), "node");
  EXPECT_TRUE(first["message"].IsString());
  const auto& summary = (*doc)["summary"];
  EXPECT_EQ(summary["pass"].GetUint64(), checks.size() - 1);
  EXPECT_EQ(summary["fail"].GetUint64(), 1u);
  EXPECT_EQ(summary["warn"].GetUint64(), 0u);
  EXPECT_EQ(summary["unknown"].GetUint64(), 0u);
  EXPECT_FALSE((*doc)["ok"].GetBool());
}

// Under a root, the process limit and the netns mode are the root's files, not this
// process's limit or this kernel's mode.
TEST_F(LintCollect, RootGivesMemlockAndNetnsMode) {
  LintSources sources = sources_;
  sources.memlock = nullptr;
  sources.netns_mode = nullptr;
  auto in = collect_lint_inputs(sources);
  ASSERT_TRUE(in.ok()) << in.error().message();
  ASSERT_TRUE(in->memlock.ok()) << in->memlock.error().message();
  EXPECT_EQ(in->memlock->soft, std::optional<uint64_t>(65536));
  EXPECT_EQ(in->memlock->hard, std::optional<uint64_t>(65536));
  ASSERT_TRUE(in->netns_mode.ok()) << in->netns_mode.error().message();
  EXPECT_EQ(*in->netns_mode, NetnsMode::kExclusive);
}

TEST(LintCollectLimits, MemlockRowOfProcLimits) {
  auto limit = parse_proc_limits_memlock("Limit  Soft Limit  Hard Limit  Units\n"
                                         "Max locked memory  unlimited  8388608  bytes\n");
  ASSERT_TRUE(limit.ok()) << limit.error().message();
  EXPECT_FALSE(limit->soft);
  EXPECT_EQ(limit->hard, std::optional<uint64_t>(8388608));
  EXPECT_FALSE(parse_proc_limits_memlock("Max open files 1024 1024 files\n").ok());
  EXPECT_FALSE(parse_proc_limits_memlock("Max locked memory  lots  8 bytes\n").ok());
}

TEST(LintReport, RepeatedVerdictsShareALineWithinTheTerminalWidth) {
  std::vector<LintCheck> checks;
  const std::string message = "eth's driver has no DCB support (EOPNOTSUPP), so PFC cannot be "
                              "read here; a lossless priority, if any, is set on the switch";
  for (int i = 0; i < 28; ++i)
    checks.push_back(
        {"pfc_on_roce_priority", Verdict::kUnknown, "eth" + std::to_string(i), message});
  checks.push_back({"memlock", Verdict::kPass, "node", "RLIMIT_MEMLOCK soft unlimited"});
  std::string text = render_lint_text(checks);
  EXPECT_EQ(text.find("unknown"), text.rfind("unknown  ")) << text;
  EXPECT_NE(text.find("eth0, eth1, eth2"), std::string::npos) << text;
  EXPECT_NE(text.find("more)"), std::string::npos) << text;
  EXPECT_NE(text.find("29 checks: 1 pass, 0 warn, 0 fail, 28 unknown"), std::string::npos);
  std::size_t begin = 0;
  for (std::size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    EXPECT_LT(end - begin, 100u) << text.substr(begin, end - begin);
  }
  std::string words; // the wrapped message with its line breaks and indents undone
  for (char c : text.substr(text.find("eth's"), text.find("pass") - text.find("eth's"))) {
    if (c == '\n') c = ' ';
    if (c != ' ' || (!words.empty() && words.back() != ' ')) words += c;
  }
  EXPECT_EQ(std::string(trim(words)), message) << text;
}

TEST(LintReport, TextIsAlignedOneLinePerCheck) {
  std::vector<LintCheck> checks = {
      {"memlock", Verdict::kFail, "node", "too low"},
      {"roce_v2_gid", Verdict::kUnknown, "eth0.100 10.100.0.1", "x"},
  };
  std::string text = render_lint_text(checks);
  EXPECT_EQ(text, "fail     memlock      node                 too low\n"
                  "unknown  roce_v2_gid  eth0.100 10.100.0.1  x\n"
                  "2 checks: 0 pass, 0 warn, 1 fail, 1 unknown\n");
}

} // namespace
} // namespace fabric::probes
