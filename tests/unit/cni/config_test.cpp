// Network configuration parsing: realistic Multus configs, versions, field errors that name
// the field, contradictory settings, GC's valid attachments, MAC and device precedence.
#include <gtest/gtest.h>

#include "cni/config.h"
#include "cni/result.h"
#include "cni/version.h"
#include "tests/unit/cni/corpus.h"

namespace fabric::cni {
namespace {

// A minimal valid shared-mode config with `extra` spliced in as more top-level keys.
std::string conf_with(const std::string& extra, const std::string& version = "1.1.0") {
  return R"({"cniVersion": ")" + version +
         R"(", "name": "roce-plane", "type": "fabric-cni", "master": "eth1")" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

void expect_field_error(const Result<NetConf>& r, const std::string& field,
                        const std::string& detail = "") {
  ASSERT_FALSE(r.ok()) << "expected an error about " << field;
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidConfig) << r.error().message();
  EXPECT_EQ(cni_code_for(r.error().code()), 7);
  EXPECT_EQ(r.error().message().rfind(field + ":", 0), 0u)
      << "the message starts with the field: " << r.error().message();
  if (!detail.empty()) {
    EXPECT_NE(r.error().message().find(detail), std::string::npos) << r.error().message();
  }
}

TEST(CniConfig, ParsesAFullMultusSharedConfig) {
  auto conf = parse_netconf(corpus_file("config-shared-multus.json"), Command::kAdd);
  ASSERT_TRUE(conf.ok()) << conf.error().message();
  EXPECT_EQ(conf->cni_version, "1.1.0");
  EXPECT_EQ(conf->name, "roce-plane");
  EXPECT_EQ(conf->type, "fabric-cni");
  EXPECT_EQ(conf->mode, Mode::kShared);
  EXPECT_EQ(conf->master, "ens1f0np0");
  EXPECT_EQ(conf->mtu, 4200);
  EXPECT_EQ(conf->macvlan_mode, MacvlanMode::kBridge);
  EXPECT_EQ(conf->gid_check, GidCheck::kRequire);
  EXPECT_EQ(conf->gid_timeout, std::chrono::milliseconds(8000));
  EXPECT_EQ(conf->log_file, "/var/log/fabric-cni.log");
  EXPECT_EQ(conf->log_level, "debug");
  EXPECT_EQ(conf->ipam_type, "host-local");
  EXPECT_EQ(conf->runtime_mac, "02:00:0a:4d:01:0a") << "lower-cased";
  EXPECT_EQ(conf->runtime_device_id, "0000:3b:00.1");
  EXPECT_EQ(conf->device_info_file,
            "/var/run/k8s.cni.cncf.io/devinfo/cni/roce-plane-0c1b2a-net1-device.json");
  EXPECT_EQ(conf->runtime_ips, std::vector<std::string>{"10.77.1.10/16"});
  EXPECT_EQ(conf->args_ips, std::vector<std::string>{"10.77.1.10"});
  EXPECT_EQ(conf->device_id, "0000:3b:00.0");
  EXPECT_EQ(conf->pci_bus_id, "0000:3b:00.0");
  EXPECT_FALSE(conf->prev_result.has_value());
  EXPECT_EQ(conf->raw, corpus_file("config-shared-multus.json")) << "IPAM gets stdin unchanged";
}

TEST(CniConfig, DefaultsForAMinimalConfig) {
  auto conf = parse_netconf(corpus_file("config-shared-minimal-0.3.1.json"), Command::kAdd);
  ASSERT_TRUE(conf.ok()) << conf.error().message();
  EXPECT_EQ(conf->cni_version, "0.3.1");
  EXPECT_EQ(conf->mode, Mode::kShared);
  EXPECT_EQ(conf->macvlan_mode, MacvlanMode::kBridge);
  EXPECT_EQ(conf->gid_check, GidCheck::kRequire);
  EXPECT_EQ(conf->gid_timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(conf->state_dir, "/var/lib/cni/fabric");
  EXPECT_EQ(conf->log_level, "info");
  EXPECT_FALSE(conf->mtu.has_value());
  EXPECT_FALSE(conf->ipam_type.has_value()) << "\"ipam\": {} means no IPAM";
}

TEST(CniConfig, ExclusiveModeWithAnRdmaDevice) {
  auto conf = parse_netconf(corpus_file("config-exclusive.json"), Command::kAdd);
  ASSERT_TRUE(conf.ok()) << conf.error().message();
  EXPECT_EQ(conf->mode, Mode::kExclusive);
  EXPECT_EQ(conf->rdma_device, "mlx5_2");
  EXPECT_EQ(conf->gid_check, GidCheck::kWarn);
  EXPECT_EQ(conf->ipam_type, "static");
}

TEST(CniConfig, MissingCniVersionReadsAs010AndIsRefusedWithCode1) {
  auto r = parse_netconf(corpus_file("broken-no-version.json"), Command::kAdd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kIncompatibleVersion);
  EXPECT_EQ(cni_code_for(r.error().code()), 1);
  EXPECT_NE(r.error().message().find("0.1.0"), std::string::npos) << r.error().message();
  EXPECT_FALSE(r.error().hint().empty()) << "says how to fix it";
  // An empty cniVersion is the same thing to libcni.
  auto empty = parse_netconf(conf_with("", ""), Command::kDel);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(cni_code_for(empty.error().code()), 1);
}

TEST(CniConfig, AConfigurationOverOneMebibyteIsRefusedUnparsed) {
  std::string huge = conf_with(R"("padding": ")" + std::string(kMaxNetConfBytes, 'x') + "\"");
  auto r = parse_netconf(huge, Command::kAdd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidConfig);
  EXPECT_NE(r.error().message().find("more than 1048576 bytes on stdin"), std::string::npos)
      << r.error().message();
}

TEST(CniConfig, VersionNeverFailsOnStdin) {
  for (const char* stdin_text : {"", "not json", R"({"cniVersion": "9.9.9"})"}) {
    auto r = parse_netconf(stdin_text, Command::kVersion);
    ASSERT_TRUE(r.ok()) << stdin_text;
    EXPECT_EQ(r->cni_version, kLatestVersion);
  }
}

TEST(CniConfig, UnsupportedVersionsAreCode1) {
  for (const char* v : {"0.2.0", "0.1.0", "1.2.0", "2.0.0"}) {
    auto r = parse_netconf(conf_with("", v), Command::kAdd);
    ASSERT_FALSE(r.ok()) << v;
    EXPECT_EQ(cni_code_for(r.error().code()), 1) << v;
    EXPECT_NE(r.error().message().find(v), std::string::npos);
  }
  auto check = parse_netconf(conf_with(R"("prevResult": {})", "0.3.1"), Command::kCheck);
  ASSERT_FALSE(check.ok()) << "CHECK came with 0.4.0";
  EXPECT_EQ(cni_code_for(check.error().code()), 1);
  auto gc = parse_netconf(conf_with(R"("cni.dev/valid-attachments": [])", "1.0.0"), Command::kGc);
  ASSERT_FALSE(gc.ok()) << "GC came with 1.1.0";
  EXPECT_EQ(cni_code_for(gc.error().code()), 1);
}

TEST(CniConfig, MalformedJsonIsCode6WithPosition) {
  auto r = parse_netconf(corpus_file("broken-trailing-comma.json"), Command::kAdd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDecode);
  EXPECT_EQ(cni_code_for(r.error().code()), 6);
  EXPECT_NE(r.error().message().find("line 5, column 1"), std::string::npos) << r.error().message();
  auto array = parse_netconf("[1, 2]", Command::kAdd);
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(cni_code_for(array.error().code()), 6);
}

TEST(CniConfig, InvalidFieldsAreCode7NamingTheField) {
  expect_field_error(parse_netconf(corpus_file("broken-mtu.json"), Command::kAdd), "mtu",
                     "must be between 68 and 65535");
  expect_field_error(parse_netconf(conf_with(R"("mtu": 65536)"), Command::kAdd), "mtu");
  expect_field_error(parse_netconf(conf_with(R"("mtu": "9000")"), Command::kAdd), "mtu",
                     "must be an integer");
  expect_field_error(parse_netconf(conf_with(R"("macvlanMode": "bridged")"), Command::kAdd),
                     "macvlanMode", "\"bridge\"");
  expect_field_error(parse_netconf(conf_with(R"("mode": "dedicated")"), Command::kAdd), "mode");
  expect_field_error(parse_netconf(conf_with(R"("gidCheck": true)"), Command::kAdd), "gidCheck");
  expect_field_error(parse_netconf(conf_with(R"("gidTimeoutMs": -1)"), Command::kAdd),
                     "gidTimeoutMs");
  expect_field_error(parse_netconf(conf_with(R"("mac": "02:00:00:00:00")"), Command::kAdd), "mac");
  expect_field_error(parse_netconf(conf_with(R"("mac": "01:00:5e:00:00:01")"), Command::kAdd),
                     "mac", "multicast");
  expect_field_error(parse_netconf(conf_with(R"("stateDir": "var/lib")"), Command::kAdd),
                     "stateDir", "absolute");
  expect_field_error(parse_netconf(conf_with(R"("logLevel": "loud")"), Command::kAdd), "logLevel");
  expect_field_error(parse_netconf(conf_with(R"("ipam": {"type": "../bin/sh"})"), Command::kAdd),
                     "ipam.type");
  expect_field_error(parse_netconf(conf_with(R"("ipam": [])"), Command::kAdd), "ipam");
  expect_field_error(parse_netconf(conf_with(R"("deviceID": "mlx5_core.sf.2")"), Command::kAdd),
                     "deviceID", "PCI address");
  expect_field_error(
      parse_netconf(conf_with(R"("runtimeConfig": {"deviceID": "3b:00.9"})"), Command::kAdd),
      "runtimeConfig.deviceID");
  expect_field_error(
      parse_netconf(conf_with(R"("runtimeConfig": {"ips": ["10.0.0.1/24", "10.0.0.300"]})"),
                    Command::kAdd),
      "runtimeConfig.ips[1]");
  expect_field_error(
      parse_netconf(conf_with(R"("args": {"cni": {"ips": "10.0.0.1"}})"), Command::kAdd),
      "args.cni.ips");
  expect_field_error(
      parse_netconf(R"({"cniVersion": "1.0.0", "name": "n", "type": "macvlan"})", Command::kAdd),
      "type", "fabric-cni");
  expect_field_error(
      parse_netconf(R"({"cniVersion": "1.0.0", "type": "fabric-cni", "master": "eth1"})",
                    Command::kAdd),
      "name");
  expect_field_error(parse_netconf(R"({"cniVersion": "1.0.0", "name": "a/b", "type": "fabric-cni",
                                       "master": "eth1"})",
                                   Command::kAdd),
                     "name");
  expect_field_error(parse_netconf(conf_with(R"("rdmaDevice": "../mlx5_0")"), Command::kAdd),
                     "rdmaDevice");
}

TEST(CniConfig, MasterIsAConfigErrorNotAnEnvironmentError) {
  auto r = parse_netconf(
      R"({"cniVersion": "1.0.0", "name": "n", "type": "fabric-cni", "master": "eth 1"})",
      Command::kAdd);
  expect_field_error(r, "master");
}

TEST(CniConfig, UnknownKeysAndRuntimeAdditionsAreIgnored) {
  auto conf = parse_netconf(
      conf_with(R"("capabilities": {"mac": true}, "dns": {"nameservers": ["10.0.0.53"]},
                   "args": {"cni": {"labels": [{"key": "app", "value": "trainer"}]}},
                   "cniVersions": ["1.0.0", "1.1.0"], "multusExtra": {"x": [1, 2, 3]})"),
      Command::kAdd);
  ASSERT_TRUE(conf.ok()) << conf.error().message();
  EXPECT_TRUE(conf->args_ips.empty());
}

TEST(CniConfig, ExclusiveRefusesMacvlanSettings) {
  expect_field_error(parse_netconf(corpus_file("broken-exclusive-macvlan.json"), Command::kAdd),
                     "macvlanMode", "exclusive");
  expect_field_error(
      parse_netconf(conf_with(R"("mode": "exclusive", "mac": "02:00:00:00:00:01")"), Command::kAdd),
      "mac");
  expect_field_error(
      parse_netconf(
          conf_with(R"("mode": "exclusive", "runtimeConfig": {"mac": "02:00:00:00:00:01"})"),
          Command::kAdd),
      "runtimeConfig.mac");
}

TEST(CniConfig, AddNeedsAParentButDelDoesNot) {
  const std::string no_parent = R"({"cniVersion": "1.1.0", "name": "n", "type": "fabric-cni"})";
  expect_field_error(parse_netconf(no_parent, Command::kAdd), "master", "no parent device");
  EXPECT_TRUE(parse_netconf(no_parent, Command::kDel).ok()) << "DEL must be able to clean up";
  EXPECT_TRUE(parse_netconf(corpus_file("config-sriov-deviceid.json"), Command::kAdd).ok())
      << "a device plugin's deviceID is a parent";
}

TEST(CniConfig, KeepsPrevResultForDelAndRequiresItForCheck) {
  auto conf = parse_netconf(corpus_file("config-del-prevresult.json"), Command::kDel);
  ASSERT_TRUE(conf.ok()) << conf.error().message();
  ASSERT_TRUE(conf->prev_result.has_value());
  auto prev = parse_result(*conf->prev_result);
  ASSERT_TRUE(prev.ok()) << prev.error().message();
  EXPECT_EQ(prev->interfaces.at(0).sandbox,
            "/var/run/netns/cni-5d1c6c0a-7a3b-4d6e-9b55-1f0d6a3e8c21");
  EXPECT_EQ(prev->ips.at(0).address, "10.77.1.10/16");

  expect_field_error(parse_netconf(conf_with(""), Command::kCheck), "prevResult", "CHECK");
  expect_field_error(parse_netconf(conf_with(R"("prevResult": [])"), Command::kDel), "prevResult");
}

TEST(CniConfig, GcParsesValidAttachments) {
  auto conf = parse_netconf(corpus_file("config-gc.json"), Command::kGc);
  ASSERT_TRUE(conf.ok()) << conf.error().message();
  ASSERT_EQ(conf->valid_attachments.size(), 2u);
  EXPECT_EQ(conf->valid_attachments[0],
            (ValidAttachment{"3f6940ab5ab43bc522569d15b23f8c1bbde1d7678b080398506924fc01d72755",
                             "net1"}));
  EXPECT_EQ(conf->valid_attachments[1].ifname, "net2");

  // libcni's earlier key alone still works.
  auto legacy = parse_netconf(
      conf_with(R"("cni.dev/attachments": [{"containerID": "abc", "ifname": "net1"}])"),
      Command::kGc);
  ASSERT_TRUE(legacy.ok()) << legacy.error().message();
  EXPECT_EQ(legacy->valid_attachments, (std::vector<ValidAttachment>{{"abc", "net1"}}));

  auto none_valid = parse_netconf(conf_with(R"("cni.dev/valid-attachments": [])"), Command::kGc);
  ASSERT_TRUE(none_valid.ok());
  EXPECT_TRUE(none_valid->valid_attachments.empty());
}

TEST(CniConfig, GcWithoutOrWithBadAttachmentsIsRefused) {
  expect_field_error(parse_netconf(conf_with(""), Command::kGc), "cni.dev/valid-attachments",
                     "required");
  expect_field_error(parse_netconf(conf_with(R"("cni.dev/valid-attachments": [{"containerID": "abc",
                    "ifname": "net1"}, {"containerID": "../../x", "ifname": "net1"}])"),
                                   Command::kGc),
                     "cni.dev/valid-attachments[1].containerID");
  expect_field_error(
      parse_netconf(conf_with(R"("cni.dev/valid-attachments": [{"containerID": "abc"}])"),
                    Command::kGc),
      "cni.dev/valid-attachments[0].ifname", "required");
  expect_field_error(parse_netconf(conf_with(R"("cni.dev/valid-attachments": {})"), Command::kGc),
                     "cni.dev/valid-attachments");
  // Outside GC the list is not read.
  EXPECT_TRUE(parse_netconf(conf_with(R"("cni.dev/valid-attachments": 5)"), Command::kAdd).ok());
}

CniEnv env_with_mac(const std::string& mac) {
  CniEnv env;
  env.command = Command::kAdd;
  env.args = {{"IgnoreUnknown", "true"}, {"K8S_POD_NAME", "trainer-0"}};
  if (!mac.empty()) env.args["MAC"] = mac;
  return env;
}

TEST(CniConfig, MacPrecedenceRuntimeThenArgsThenConfig) {
  auto all = parse_netconf(
      conf_with(R"("mac": "02:00:00:00:00:03", "runtimeConfig": {"mac": "02:00:00:00:00:01"})"),
      Command::kAdd);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*effective_mac(*all, env_with_mac("02:00:00:00:00:02")), "02:00:00:00:00:01");

  auto no_runtime = parse_netconf(conf_with(R"("mac": "02:00:00:00:00:03")"), Command::kAdd);
  ASSERT_TRUE(no_runtime.ok());
  EXPECT_EQ(*effective_mac(*no_runtime, env_with_mac("02:00:00:00:00:0A")), "02:00:00:00:00:0a");
  EXPECT_EQ(*effective_mac(*no_runtime, env_with_mac("")), "02:00:00:00:00:03");

  auto none = parse_netconf(conf_with(""), Command::kAdd);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(effective_mac(*none, env_with_mac(""))->has_value());

  auto bad = effective_mac(*none, env_with_mac("02-00-00-00-00-02"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidEnvironment);
  EXPECT_NE(bad.error().message().find("CNI_ARGS MAC"), std::string::npos);
}

TEST(CniConfig, ExclusiveCannotHonourAMacFromCniArgs) {
  auto conf = parse_netconf(corpus_file("config-exclusive.json"), Command::kAdd);
  ASSERT_TRUE(conf.ok());
  EXPECT_FALSE(effective_mac(*conf, env_with_mac(""))->has_value());
  auto r = effective_mac(*conf, env_with_mac("02:00:00:00:00:02"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("02:00:00:00:00:02"), std::string::npos);
}

TEST(CniConfig, DeviceIdPrecedenceRuntimeThenDeviceIdThenPciBusId) {
  auto conf = parse_netconf(corpus_file("config-shared-multus.json"), Command::kAdd);
  ASSERT_TRUE(conf.ok());
  EXPECT_EQ(effective_device_id(*conf), "0000:3b:00.1");
  conf->runtime_device_id.reset();
  conf->device_id = "0000:3b:00.2";
  EXPECT_EQ(effective_device_id(*conf), "0000:3b:00.2");
  conf->device_id.clear();
  EXPECT_EQ(effective_device_id(*conf), "0000:3b:00.0");
  conf->pci_bus_id.clear();
  EXPECT_FALSE(effective_device_id(*conf).has_value());
}

// Config validation and ADD read PCI addresses with one parser (common/hw_address.h):
// what passes here is what resolve_parent() looks up, VMD domains included.
TEST(CniConfig, PciAddressesAsSysfsWritesThem) {
  for (const char* ok : {"0000:3b:00.1", "3b:00.1", "10000:00:1f.7", "0000:AF:00.2"}) {
    auto conf =
        parse_netconf(conf_with(std::string(R"("deviceID": ")") + ok + "\""), Command::kAdd);
    EXPECT_TRUE(conf.ok()) << ok << ": " << conf.error().message();
  }
  for (const char* bad : {"0000:3b:00", "0000:3b:20.0", "0000:3b:00.8", "000:3b:00.1",
                          "0000:3b:0g.1", "mlx5_core.sf.2", "0000:3b:00.1/", "123456789:3b:00.1"}) {
    expect_field_error(
        parse_netconf(conf_with(std::string(R"("pciBusID": ")") + bad + "\""), Command::kAdd),
        "pciBusID", "is not a PCI address");
  }
}

} // namespace
} // namespace fabric::cni
