// apply_profile / verify_profile against the fake DCB device, and HostKnobs against a
// temporary folder laid out like /sys.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/json.h"
#include "pfc/apply.h"
#include "tests/unit/fake_dcb_device.h"

namespace fabric::pfc {
namespace {

namespace fs = std::filesystem;

// A temporary folder that stands for "/", removed afterwards.
class TempRoot {
public:
  TempRoot() {
    std::string pattern = (fs::temp_directory_path() / "pfc-knobs-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void write(const std::string& relative, const std::string& content) const {
    fs::create_directories(fs::path(path_ + "/" + relative).parent_path());
    std::ofstream(path_ + "/" + relative) << content;
  }
  std::string read(const std::string& relative) const {
    std::ifstream in(path_ + "/" + relative);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  bool exists(const std::string& relative) const { return fs::exists(path_ + "/" + relative); }
  void mkdir(const std::string& relative) const { fs::create_directories(path_ + "/" + relative); }

  // The mlx5 ECN files of `dev`, all priorities off.
  void add_ecn(const std::string& dev, const std::string& point) const {
    for (int p = 0; p < 8; ++p)
      write("sys/class/net/" + dev + "/ecn/" + point + "/enable/" + std::to_string(p), "0\n");
  }
  std::string ecn(const std::string& point) const {
    std::string bits;
    for (int p = 0; p < 8; ++p)
      bits += read("sys/class/net/eth2/ecn/" + point + "/enable/" + std::to_string(p)).substr(0, 1);
    return bits;
  }

private:
  std::string path_;
};

// An mlx5 port "eth2" with its ECN files, ready for the RoCE profile.
struct Rig {
  Rig() {
    device.add("eth2", mlx5_defaults());
    root.add_ecn("eth2", "roce_np");
    root.add_ecn("eth2", "roce_rp");
  }
  Result<ApplyReport> apply(const DesiredConfig& d = roce_profile()) {
    return apply_profile(device, knobs, "eth2", d);
  }
  Result<Plan> verify(const DesiredConfig& d = roce_profile()) {
    return verify_profile(device, knobs, "eth2", d);
  }
  FakeDcbDevice device;
  TempRoot root;
  HostKnobs knobs{root.path()};
};

Outcome outcome_of(const ApplyReport& report, const std::string& attribute) {
  const AttributeOutcome* a = report.find(attribute);
  EXPECT_NE(a, nullptr) << attribute << "\n" << render_apply_text(report);
  return a ? a->outcome : Outcome::kUnverified;
}

TEST(PfcApply, RoceProfileEndToEnd) {
  Rig rig;
  auto report = rig.apply();
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->fully_applied()) << render_apply_text(*report);
  EXPECT_EQ(rig.device.writes(), 1); // one IEEE set for PFC, ETS and APP together
  for (const auto& attribute : attributes_named_by(roce_profile()))
    EXPECT_EQ(outcome_of(*report, attribute), Outcome::kApplied) << attribute;
  EXPECT_EQ(report->find("pfc.prio_pfc")->detail,
            "0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off -> "
            "0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off");
  std::string text = render_apply_text(*report);
  EXPECT_EQ(text.substr(0, text.find('\n')), "eth2: profile applied (applied 7)");
  EXPECT_NE(text.find("\n  applied           ets.tc_tsa: "), std::string::npos) << text;

  const DcbState& now = rig.device.state("eth2");
  EXPECT_EQ(now.pfc->pfc_en, 8);
  EXPECT_EQ(now.ets->tc_tx_bw, (PerTc<uint8_t>{50, 0, 0, 50, 0, 0, 0, 0}));
  EXPECT_EQ(now.apps, (std::vector<AppEntry>{dscp(26, 3), dscp(48, 6)}));
  EXPECT_EQ(rig.root.ecn("roce_np"), "00010000");
  EXPECT_EQ(rig.root.ecn("roce_rp"), "00010000");

  auto plan = rig.verify();
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_TRUE(plan->in_sync()) << render_plan_text(*plan);
  EXPECT_TRUE(require_in_sync(*plan).ok());
}

TEST(PfcApply, SecondApplyIsInSyncAndWritesNothing) {
  Rig rig;
  ASSERT_TRUE(rig.apply().ok());
  ASSERT_EQ(rig.device.writes(), 1);
  auto again = rig.apply();
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_TRUE(again->was_in_sync);
  EXPECT_TRUE(again->fully_applied());
  EXPECT_EQ(rig.device.writes(), 1);
  EXPECT_FALSE(again->dcb_write_attempted);
  EXPECT_EQ(again->count(Outcome::kUnchanged), 7);
  std::string text = render_apply_text(*again);
  EXPECT_EQ(text.substr(0, text.find('\n')), "eth2: in sync with the profile; nothing written");
}

TEST(PfcApply, DriverThatSilentlySkipsEtsIsNamed) {
  Rig rig;
  rig.device.ignore(FakeDcbDevice::Part::kEts);
  auto report = rig.apply();
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_FALSE(report->fully_applied());
  EXPECT_EQ(outcome_of(*report, "pfc.prio_pfc"), Outcome::kApplied);
  EXPECT_EQ(outcome_of(*report, "app.dscp_prio"), Outcome::kApplied);
  EXPECT_EQ(outcome_of(*report, "ets.tc_bw"), Outcome::kIgnoredByDevice);
  EXPECT_EQ(report->find("ets.tc_bw")->detail,
            "the device accepted the set but still reports 0:13 1:13 2:13 3:13 4:12 5:12 6:12 "
            "7:12; its driver ignored it");
  std::string text = render_apply_text(*report);
  EXPECT_NE(text.find("eth2: profile NOT fully applied (applied 4, ignored by device 3)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  ignored by device ets.tc_bw: the device accepted the set"),
            std::string::npos)
      << text;

  auto verdict = require_fully_applied(*report);
  ASSERT_FALSE(verdict.ok());
  EXPECT_EQ(verdict.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(verdict.error().message(),
            "eth2: 3 attributes were not applied (ets.prio_tc, ets.tc_bw, ets.tc_tsa)");

  // verify sees the same drift, and says so as a failed check (exit 3).
  auto plan = rig.verify();
  ASSERT_TRUE(plan.ok());
  auto drift = require_in_sync(*plan);
  ASSERT_FALSE(drift.ok());
  EXPECT_EQ(drift.error().code(), ErrorCode::kBelowThreshold);
  EXPECT_EQ(exit_status_for(drift.error().code()), 3);
  EXPECT_EQ(drift.error().message(),
            "eth2: 3 attributes drifted from the profile (ets.prio_tc, ets.tc_bw, ets.tc_tsa)");
}

TEST(PfcApply, InBandErrorAppliesNoneOfTheDcbPartAndSaysSo) {
  Rig rig;
  rig.device.fail_in_band(EINVAL);
  auto report = rig.apply();
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_FALSE(report->fully_applied());
  ASSERT_TRUE(report->dcb_write_error.has_value());
  EXPECT_EQ(rig.device.writes(), 1);
  EXPECT_EQ(rig.device.state("eth2").pfc->pfc_en, 0);
  for (const char* attribute : {"pfc.prio_pfc", "ets.prio_tc", "app.dscp_prio"}) {
    EXPECT_EQ(outcome_of(*report, attribute), Outcome::kFailed) << attribute;
  }
  EXPECT_EQ(report->find("pfc.prio_pfc")->detail,
            "not applied: the device still reports 0:off 1:off 2:off 3:off 4:off 5:off 6:off "
            "7:off");
  // The host knobs do not depend on DCB: they were set, and the report says so.
  EXPECT_EQ(outcome_of(*report, "ecn.roce_np"), Outcome::kApplied);
  EXPECT_EQ(rig.root.ecn("roce_np"), "00010000");

  std::string text = render_apply_text(*report);
  EXPECT_NE(text.find("  the DCB change failed and none of it was applied: eth2: "
                      "DCB_CMD_IEEE_SET: the kernel accepted the message but the driver failed "
                      "it (in-band status -22): Invalid argument\n"),
            std::string::npos)
      << text;
  auto verdict = require_fully_applied(*report);
  ASSERT_FALSE(verdict.ok());
  EXPECT_EQ(verdict.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(verdict.error().message().find("in-band status -22"), std::string::npos);
}

TEST(PfcApply, SetThatFailsPartWayReportsWhatGotThrough) {
  Rig rig;
  // dcbnl ran the driver's ETS op, then its PFC op failed: ETS stays applied.
  rig.device.fail_in_band(EINVAL, FakeDcbDevice::Part::kPfc);
  auto report = rig.apply();
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_FALSE(report->fully_applied());
  EXPECT_EQ(outcome_of(*report, "ets.tc_bw"), Outcome::kApplied);
  EXPECT_EQ(report->find("ets.tc_bw")->detail,
            "0:13 1:13 2:13 3:13 4:12 5:12 6:12 7:12 -> 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 "
            "(applied before the DCB change failed)");
  EXPECT_EQ(outcome_of(*report, "pfc.prio_pfc"), Outcome::kFailed);
  EXPECT_EQ(outcome_of(*report, "app.dscp_prio"), Outcome::kFailed);
  std::string text = render_apply_text(*report);
  EXPECT_NE(text.find("  the DCB change failed part-way (see below for what got through): "),
            std::string::npos)
      << text;
}

TEST(PfcApply, DeviceWithoutDcbIsUnsupported) {
  Rig rig;
  rig.device.add_without_dcb("veth0");
  auto report = apply_profile(rig.device, rig.knobs, "veth0", roce_profile());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(report.error().message(),
            "veth0 does not support DCB: veth0: DCB_CMD_IEEE_GET: Operation not supported");
  EXPECT_NE(report.error().hint().find("dcbnl"), std::string::npos);
  EXPECT_EQ(rig.device.writes(), 0);
  EXPECT_EQ(verify_profile(rig.device, rig.knobs, "veth0", roce_profile()).error().code(),
            ErrorCode::kUnsupported);
}

TEST(PfcApply, MissingDeviceIsNotFoundAndNamed) {
  Rig rig;
  auto report = apply_profile(rig.device, rig.knobs, "eth9", roce_profile());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(report.error().message(), "no network device eth9: DCB_CMD_IEEE_GET: No such device");
  EXPECT_EQ(rig.device.writes(), 0);
}

TEST(PfcApply, DriftAfterApplyFailsVerify) {
  Rig rig;
  ASSERT_TRUE(rig.apply().ok());
  rig.device.state("eth2").pfc->pfc_en = 0; // someone ran `dcb pfc set ... prio-pfc 3:off`
  auto plan = rig.verify();
  ASSERT_TRUE(plan.ok());
  auto drift = require_in_sync(*plan);
  ASSERT_FALSE(drift.ok());
  EXPECT_EQ(drift.error().message(), "eth2: 1 attribute drifted from the profile (pfc.prio_pfc)");
}

TEST(PfcApply, UnavailablePartsAreReportedAndFailTheChecks) {
  Rig rig;
  rig.device.state("eth2").maxrate.reset();
  DesiredConfig desired = roce_profile();
  desired.tc_maxrate = PerTc<uint64_t>{};
  auto report = rig.apply(desired);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(outcome_of(*report, "maxrate"), Outcome::kNotAvailable);
  EXPECT_EQ(outcome_of(*report, "pfc.prio_pfc"), Outcome::kApplied);
  EXPECT_FALSE(report->fully_applied());

  auto plan = rig.verify(desired);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->in_sync());
  auto verdict = require_in_sync(*plan);
  ASSERT_FALSE(verdict.ok());
  EXPECT_EQ(verdict.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(verdict.error().message().find("1 part of the profile not available: maxrate: "),
            std::string::npos)
      << verdict.error().message();
}

TEST(PfcApply, JsonReportNamesEveryAttribute) {
  Rig rig;
  rig.device.ignore(FakeDcbDevice::Part::kPfc);
  auto report = rig.apply();
  ASSERT_TRUE(report.ok());
  auto doc = json::parse(render_apply_json(*report), "apply");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ((*doc)["schema_version"].GetInt(), 1);
  EXPECT_FALSE((*doc)["fully_applied"].GetBool());
  EXPECT_TRUE((*doc)["dcb_write"]["attempted"].GetBool());
  EXPECT_TRUE((*doc)["dcb_write"]["error"].IsNull());
  const auto& attrs = (*doc)["attributes"];
  ASSERT_EQ(attrs.Size(), 7u);
  EXPECT_EQ(std::string(attrs[0]["attribute"].GetString()), "pfc.prio_pfc");
  EXPECT_EQ(std::string(attrs[0]["outcome"].GetString()), "ignored_by_device");
  EXPECT_EQ(std::string(attrs[1]["outcome"].GetString()), "applied");
}

// --- HostKnobs on a temporary root ---

TEST(HostKnobs, AppliedUnchangedAndNotAvailable) {
  TempRoot root;
  root.add_ecn("eth2", "roce_np"); // no roce_rp: another driver, or an old kernel
  root.mkdir("sys/class/net/eth2/device/infiniband/mlx5_0");
  root.mkdir("sys/class/infiniband/mlx5_0/ports/1"); // its only port
  root.write("sys/class/infiniband/mlx5_0/tc/1/traffic_class", "Global tclass=0\n");
  HostKnobs knobs(root.path());
  HostState wanted;
  wanted.ecn_np = 1 << 3;
  wanted.ecn_rp = 1 << 3;
  wanted.rdma_traffic_class = 106;
  wanted.cm_default_tos = 106; // no configfs rdma_cm under this root

  auto report = knobs.apply("eth2", std::nullopt, wanted);
  ASSERT_TRUE(report.ok()) << report.error().message();
  ASSERT_EQ(report->knobs.size(), 4u);
  EXPECT_EQ(report->find("ecn.roce_np")->outcome, KnobOutcome::kApplied);
  EXPECT_EQ(report->find("ecn.roce_rp")->outcome, KnobOutcome::kNotAvailable);
  EXPECT_EQ(report->find("ecn.roce_rp")->detail,
            "not available on this host (no /sys/class/net/eth2/ecn/roce_rp; the mlx5 driver "
            "provides it)");
  EXPECT_EQ(report->find("rdma.traffic_class")->outcome, KnobOutcome::kApplied);
  EXPECT_EQ(report->find("rdma.traffic_class")->detail, "0 -> 106");
  EXPECT_EQ(report->find("rdma.cm_default_tos")->outcome, KnobOutcome::kNotAvailable);
  EXPECT_NE(report->find("rdma.cm_default_tos")->detail.find("configfs"), std::string::npos);
  EXPECT_EQ(root.ecn("roce_np"), "00010000");
  EXPECT_EQ(root.read("sys/class/infiniband/mlx5_0/tc/1/traffic_class"), "tclass=106");

  auto again = knobs.apply("eth2", std::nullopt, wanted);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->find("ecn.roce_np")->outcome, KnobOutcome::kUnchanged);
  EXPECT_EQ(again->find("rdma.traffic_class")->outcome, KnobOutcome::kUnchanged);
}

TEST(HostKnobs, RdmaCmDefaultsGoThroughConfigfs) {
  TempRoot root;
  const std::string port = "sys/kernel/config/rdma_cm/mlx5_1/ports/1/";
  root.mkdir("sys/class/infiniband/mlx5_1/ports/1");
  root.write(port + "default_roce_tos", "0\n");
  root.write(port + "default_roce_mode", "IB/RoCE v1\n");
  HostKnobs knobs(root.path());
  HostState wanted;
  wanted.cm_default_tos = 106;
  wanted.cm_default_roce_mode = "RoCE v2";

  auto report = knobs.apply("eth2", std::string("mlx5_1"), wanted); // the override wins
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->find("rdma.cm_default_tos")->outcome, KnobOutcome::kApplied);
  EXPECT_EQ(report->find("rdma.cm_default_roce_mode")->detail, "IB/RoCE v1 -> RoCE v2");
  EXPECT_EQ(root.read(port + "default_roce_tos"), "106");
  EXPECT_EQ(root.read(port + "default_roce_mode"), "RoCE v2");
  auto state = knobs.read("eth2", std::string("mlx5_1"));
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->cm_default_tos, 106);
  EXPECT_EQ(state->rdma_device, "mlx5_1");
  EXPECT_TRUE(root.exists("sys/kernel/config/rdma_cm/mlx5_1")); // not ours to remove
}

TEST(HostKnobs, ConfigfsFolderMadeForAReadIsRemovedAfterwards) {
  TempRoot root;
  root.mkdir("sys/kernel/config/rdma_cm");
  HostKnobs knobs(root.path());
  auto state = knobs.read("eth2", std::string("mlx5_0"));
  ASSERT_TRUE(state.ok()) << state.error().message();
  // A plain folder has no ports/1 files: the knobs are not available, and the folder
  // mkdir made is gone again.
  EXPECT_FALSE(state->cm_default_tos.has_value());
  EXPECT_FALSE(root.exists("sys/kernel/config/rdma_cm/mlx5_0"));
}

// A dual-port device (one RDMA device, a netdev per port): the knobs of the port whose
// netdev the profile names, never port 1 by default. A device with several ports none of
// which names the netdev has no knobs we could set with confidence.
TEST(HostKnobs, TheRdmaKnobsAreThoseOfThePortServingTheNetdev) {
  TempRoot root;
  root.mkdir("sys/class/net/eth2/device/infiniband/mlx4_0");
  for (const char* port : {"1", "2"}) {
    const std::string p = port;
    root.write("sys/class/infiniband/mlx4_0/ports/" + p + "/gid_attrs/ndevs/0",
               p == "1" ? "eth1\n" : "eth2\n");
    root.write("sys/class/infiniband/mlx4_0/tc/" + p + "/traffic_class", "tclass=0\n");
    root.write("sys/kernel/config/rdma_cm/mlx4_0/ports/" + p + "/default_roce_tos", "0\n");
  }
  HostKnobs knobs(root.path());
  HostState wanted;
  wanted.cm_default_tos = 106;
  wanted.rdma_traffic_class = 106;
  auto report = knobs.apply("eth2", std::nullopt, wanted);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->find("rdma.cm_default_tos")->outcome, KnobOutcome::kApplied);
  EXPECT_EQ(report->find("rdma.traffic_class")->outcome, KnobOutcome::kApplied);
  EXPECT_EQ(root.read("sys/kernel/config/rdma_cm/mlx4_0/ports/2/default_roce_tos"), "106");
  EXPECT_EQ(root.read("sys/class/infiniband/mlx4_0/tc/2/traffic_class"), "tclass=106");
  EXPECT_EQ(root.read("sys/kernel/config/rdma_cm/mlx4_0/ports/1/default_roce_tos"), "0\n")
      << "port 1 serves eth1, which the profile does not name";
  EXPECT_EQ(root.read("sys/class/infiniband/mlx4_0/tc/1/traffic_class"), "tclass=0\n");
  auto state = knobs.read("eth2", std::nullopt);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->rdma_port, 2u);

  auto unknown = knobs.apply("eth3", std::string("mlx4_0"), wanted);
  ASSERT_TRUE(unknown.ok()) << unknown.error().message();
  EXPECT_EQ(unknown->find("rdma.traffic_class")->outcome, KnobOutcome::kNotAvailable);
  EXPECT_NE(unknown->find("rdma.traffic_class")
                ->detail.find("cannot tell which port of mlx4_0 serves eth3: 2 ports"),
            std::string::npos)
      << unknown->find("rdma.traffic_class")->detail;
}

TEST(HostKnobs, FindsTheRdmaDeviceOfANetdev) {
  TempRoot root;
  HostKnobs knobs(root.path());
  EXPECT_EQ(*knobs.rdma_device_of("eth2"), "");
  root.mkdir("sys/class/net/eth2/device/infiniband/mlx5_2");
  EXPECT_EQ(*knobs.rdma_device_of("eth2"), "mlx5_2");
}

TEST(HostKnobs, TrafficClassReadsEitherFormAndRejectsOthers) {
  TempRoot root;
  root.mkdir("sys/class/net/eth2/device/infiniband/mlx5_0");
  root.mkdir("sys/class/infiniband/mlx5_0/ports/1");
  const std::string file = "sys/class/infiniband/mlx5_0/tc/1/traffic_class";
  HostKnobs knobs(root.path());
  KnobSelection only_tc{false, false, false, false, true};
  for (auto [text, value] :
       {std::pair{"Global tclass=106\n", 106}, {"tclass=96", 96}, {"tclass=-1\n", 0}, {"", 0}}) {
    root.write(file, text);
    auto state = knobs.read("eth2", std::nullopt, only_tc);
    ASSERT_TRUE(state.ok()) << text << ": " << state.error().message();
    EXPECT_EQ(state->rdma_traffic_class, value) << text;
  }
  root.write(file, "garbage");
  auto bad = knobs.read("eth2", std::nullopt, only_tc);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kDecode);
  EXPECT_NE(bad.error().message().find("found 'garbage'"), std::string::npos);
}

TEST(HostKnobs, BadEcnFileIsAnErrorNamingIt) {
  TempRoot root;
  root.add_ecn("eth2", "roce_np");
  root.write("sys/class/net/eth2/ecn/roce_np/enable/5", "2\n");
  HostKnobs knobs(root.path());
  auto state = knobs.read("eth2", std::nullopt);
  ASSERT_FALSE(state.ok());
  EXPECT_EQ(state.error().code(), ErrorCode::kDecode);
  EXPECT_NE(state.error().message().find("ecn/roce_np/enable/5"), std::string::npos);
}

TEST(HostKnobs, AFailedWriteIsReportedNotSkipped) {
  // A read-only sysfs attribute that reads "0": kernfs refuses to open it for writing,
  // even for root.
  const std::string readonly = "/sys/class/net/lo/addr_assign_type";
  if (::access(readonly.c_str(), R_OK) != 0) GTEST_SKIP() << "no " << readonly;
  TempRoot root;
  root.add_ecn("eth2", "roce_np");
  std::string p3 = root.path() + "/sys/class/net/eth2/ecn/roce_np/enable/3";
  fs::remove(p3);
  fs::create_symlink(readonly, p3);
  HostKnobs knobs(root.path());
  HostState wanted;
  wanted.ecn_np = 1 << 3;
  auto report = knobs.apply("eth2", std::nullopt, wanted);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->find("ecn.roce_np")->outcome, KnobOutcome::kFailed);
  EXPECT_NE(report->find("ecn.roce_np")->detail.find("enable/3"), std::string::npos)
      << report->find("ecn.roce_np")->detail;
}

} // namespace
} // namespace fabric::pfc
