// The built fabric-cni binary, driven as a runtime drives it (cni_plugin_fixture.h): every
// spec version, what Multus passes, validation, rollback of a failed ADD, DEL's best
// effort, concurrency, STATUS, GC and CHECK. Exclusive mode is in cni_exclusive_netns_test,
// DEL without state and the races in cni_recovery_netns_test.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include "common/json.h"
#include "tests/netns/cni/cni_plugin_fixture.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;

// --- 1. every supported version, with host-local and with static IPAM ---

class CniVersions : public CniPluginNetns,
                    public ::testing::WithParamInterface<std::tuple<std::string, bool>> {};

TEST_P(CniVersions, AddCheckDelDelLeavesNothing) {
  const auto& [version, use_host_local] = GetParam();
  const bool pre_1_0 = version.rfind("0.", 0) == 0;
  const std::string pod = add_pod("pod");
  const std::string pod_ns = pod_name("pod");
  Conf c = conf(version);
  if (!use_host_local) c.set("ipam", static_ipam());
  const std::string want_ip = use_host_local ? "10.9.0.2/24" : "10.9.1.5/24";
  const std::string want_route = use_host_local ? "10.20.0.0/16" : "10.30.0.0/16";
  const std::string want_gw = use_host_local ? "10.9.0.1" : "10.9.1.1";

  CniReply add = call("ADD", "c1", pod, c);
  ASSERT_TRUE(add.ok()) << add.describe();
  auto result = add.json();
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(std::string((*result)["cniVersion"].GetString()), version);

  const auto& interfaces = (*result)["interfaces"];
  ASSERT_EQ(interfaces.Size(), 1u) << add.stdout_text;
  const auto& iface = interfaces[0];
  EXPECT_EQ(std::string(iface["name"].GetString()), kIfname);
  EXPECT_EQ(std::string(iface["sandbox"].GetString()), pod);
  ASSERT_NE(find_member(iface, "mac"), nullptr);
  const std::string mac = iface["mac"].GetString();
  if (version == "1.1.0") {
    ASSERT_NE(find_member(iface, "mtu"), nullptr) << add.stdout_text;
    EXPECT_EQ(iface["mtu"].GetInt(), 1500);
  } else {
    EXPECT_EQ(find_member(iface, "mtu"), nullptr) << "mtu is a 1.1.0 field: " << add.stdout_text;
  }

  const auto& ips = (*result)["ips"];
  ASSERT_EQ(ips.Size(), 1u) << add.stdout_text;
  EXPECT_EQ(std::string(ips[0]["address"].GetString()), want_ip);
  EXPECT_EQ(ips[0]["interface"].GetInt(), 0);
  if (pre_1_0) {
    ASSERT_NE(find_member(ips[0], "version"), nullptr) << add.stdout_text;
    EXPECT_EQ(std::string(ips[0]["version"].GetString()), "4");
  } else {
    EXPECT_EQ(find_member(ips[0], "version"), nullptr) << add.stdout_text;
  }
  const auto* routes = find_member(*result, "routes");
  ASSERT_NE(routes, nullptr) << add.stdout_text;
  ASSERT_EQ(routes->Size(), 1u);
  EXPECT_EQ(std::string((*routes)[0]["dst"].GetString()), want_route);
  EXPECT_EQ(std::string((*routes)[0]["gw"].GetString()), want_gw);

  // The kernel's view of the pod matches the result.
  auto link = link_in(pod_ns, kIfname);
  ASSERT_TRUE(link) << "no " << kIfname << " in the pod";
  EXPECT_EQ(link->kind, "macvlan");
  EXPECT_EQ(link->mac, mac);
  EXPECT_EQ(link->mtu, 1500);
  EXPECT_TRUE(link->up);
  EXPECT_EQ(link->ipv4, std::vector<std::string>{want_ip});
  EXPECT_TRUE(has_route(pod_ns, kIfname, want_route, want_gw));
  EXPECT_EQ(link_names(host_), host_links_) << "nothing appears in the host namespace";
  EXPECT_EQ(has_allocation("c1"), use_host_local);
  EXPECT_TRUE(fs::exists(state_path("c1")));

  // CHECK came with 0.4.0; skel answers older versions with code 1.
  Conf check = c;
  check.set("prevResult", add.stdout_text);
  CniReply checked = call("CHECK", "c1", pod, check);
  if (pre_1_0 && version != "0.4.0") {
    EXPECT_NE(checked.exit_status, 0);
    EXPECT_EQ(checked.code(), 1) << checked.describe();
    EXPECT_TRUE(contains(checked.msg(), "CHECK")) << checked.msg();
  } else {
    EXPECT_TRUE(checked.ok()) << checked.describe();
    EXPECT_EQ(checked.stdout_text, "");
  }

  CniReply del = call("DEL", "c1", pod, c);
  EXPECT_TRUE(del.ok()) << del.describe();
  EXPECT_EQ(del.stdout_text, "");
  CniReply again = call("DEL", "c1", pod, c);
  EXPECT_TRUE(again.ok()) << again.describe();
  EXPECT_EQ(link_names(pod_ns), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_ns);
  EXPECT_TRUE(state_files().empty());
}

std::string version_case_name(const ::testing::TestParamInfo<std::tuple<std::string, bool>>& p) {
  std::string name = "v" + std::get<0>(p.param);
  std::replace(name.begin(), name.end(), '.', '_');
  return name + (std::get<1>(p.param) ? "_host_local" : "_static");
}

INSTANTIATE_TEST_SUITE_P(AllVersions, CniVersions,
                         ::testing::Combine(::testing::Values("0.3.0", "0.3.1", "0.4.0", "1.0.0",
                                                              "1.1.0"),
                                            ::testing::Bool()),
                         version_case_name);

// --- 2. what Multus passes ---

TEST_F(CniPluginNetns, MultusCniArgsAreRecordedInTheState) {
  const std::string pod = add_pod("pod");
  const std::string args = "IgnoreUnknown=true;K8S_POD_NAMESPACE=training;K8S_POD_NAME=worker-3;"
                           "K8S_POD_INFRA_CONTAINER_ID=c1;K8S_POD_UID=8d0b4c3e-1f2a-4b5c-9d6e";
  CniReply add = call("ADD", "c1", pod, conf(), args);
  ASSERT_TRUE(add.ok()) << add.describe();
  auto state = json::parse(read_text(state_path("c1")), "state");
  ASSERT_TRUE(state.ok()) << state.error().message();
  const auto& pod_info = (*state)["pod"];
  EXPECT_EQ(std::string(pod_info["namespace"].GetString()), "training");
  EXPECT_EQ(std::string(pod_info["name"].GetString()), "worker-3");
  EXPECT_EQ(std::string(pod_info["uid"].GetString()), "8d0b4c3e-1f2a-4b5c-9d6e");
  EXPECT_EQ(std::string((*state)["netns"].GetString()), pod);
  EXPECT_EQ(std::string((*state)["ips"][0].GetString()), "10.9.0.2/24");
  // Only root may read which pod has which address.
  struct stat st {};
  ASSERT_EQ(::stat(state_path("c1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(call("DEL", "c1", pod, conf(), args).ok());
}

// The exporter counts a pod by its cluster-network addresses (the only ones whose
// traffic crosses the node's netfilter): ADD, in the pod, records those of eth0 beside its
// own, without link-local ones; a pod without eth0, or primaryInterface "", records none.
TEST_F(CniPluginNetns, PrimaryInterfaceAddressesAreRecordedBesideTheAttachment) {
  const std::string pod = add_pod("pod");
  const std::string pod_ns = pod_name("pod");
  const auto [eth0, peer] = net_.add_veth("eth0", pod_ns, host_);
  run_ip({"-n", pod_ns, "link", "set", eth0, "name", "eth0"});
  run_ip({"-n", pod_ns, "addr", "add", "10.244.1.7/24", "dev", "eth0"});
  run_ip({"-n", pod_ns, "addr", "add", "fd00:10:244::7/64", "dev", "eth0", "nodad"});
  run_ip({"-n", pod_ns, "link", "set", "eth0", "up"});
  CniReply add = call("ADD", "c1", pod, conf());
  ASSERT_TRUE(add.ok()) << add.describe();
  auto state = json::parse(read_text(state_path("c1")), "state");
  ASSERT_TRUE(state.ok()) << state.error().message();
  const auto& primary = (*state)["primary"];
  EXPECT_EQ(std::string(primary["ifname"].GetString()), "eth0");
  std::vector<std::string> ips;
  for (const auto& ip : primary["ips"].GetArray())
    ips.emplace_back(ip.GetString());
  EXPECT_EQ(ips, (std::vector<std::string>{"10.244.1.7/24", "fd00:10:244::7/64"}));
  EXPECT_EQ(std::string((*state)["ips"][0].GetString()), "10.9.0.2/24");
  EXPECT_TRUE(call("DEL", "c1", pod, conf()).ok());

  const std::string bare = add_pod("bare");
  ASSERT_TRUE(call("ADD", "c2", bare, conf()).ok());
  auto none = json::parse(read_text(state_path("c2")), "state");
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_EQ((*none)["primary"]["ips"].Size(), 0u);
  EXPECT_TRUE(call("DEL", "c2", bare, conf()).ok());

  Conf off = conf();
  off.set("primaryInterface", "\"\"");
  ASSERT_TRUE(call("ADD", "c3", pod, off).ok());
  auto skipped = json::parse(read_text(state_path("c3")), "state");
  ASSERT_TRUE(skipped.ok()) << skipped.error().message();
  EXPECT_EQ((*skipped)["primary"]["ips"].Size(), 0u);
  EXPECT_TRUE(call("DEL", "c3", pod, off).ok());
}

TEST_F(CniPluginNetns, RuntimeConfigMacWinsOverCniArgsMacWhichWinsOverConfigMac) {
  const std::string config_mac = "02:00:00:00:00:01", args_mac = "02:00:00:00:00:02",
                    runtime_mac = "02:00:00:00:00:03";
  Conf base = conf();
  base.set("capabilities", "{\"mac\":true}").set("mac", json_string(config_mac));
  Conf with_runtime = base;
  with_runtime.set("runtimeConfig", "{\"mac\":" + json_string(runtime_mac) + "}");
  struct Case {
    std::string pod, args, want;
    const Conf* conf;
  } cases[] = {
      {"pa", "IgnoreUnknown=true;MAC=" + args_mac, runtime_mac, &with_runtime},
      {"pb", "IgnoreUnknown=true;MAC=" + args_mac, args_mac, &base},
      {"pc", "", config_mac, &base},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.pod);
    const std::string pod = add_pod(c.pod);
    CniReply add = call("ADD", "c-" + c.pod, pod, *c.conf, c.args);
    ASSERT_TRUE(add.ok()) << add.describe();
    auto result = add.json();
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(std::string((*result)["interfaces"][0]["mac"].GetString()), c.want);
    auto link = link_in(pod_name(c.pod), kIfname);
    ASSERT_TRUE(link);
    EXPECT_EQ(link->mac, c.want);
  }
}

TEST_F(CniPluginNetns, RuntimeConfigIpsAndArgsCniIpsReachStaticIpam) {
  const std::string static_only = "{\"type\":\"static\"}";
  struct Case {
    std::string pod, key, value, want;
  } cases[] = {
      {"pa", "runtimeConfig", "{\"ips\":[\"10.9.3.7/24\"]}", "10.9.3.7/24"},
      {"pb", "args", "{\"cni\":{\"ips\":[\"10.9.4.8/24\"]}}", "10.9.4.8/24"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.key);
    const std::string pod = add_pod(c.pod);
    Conf cf = conf();
    cf.set("capabilities", "{\"ips\":true}").set("ipam", static_only).set(c.key, c.value);
    CniReply add = call("ADD", "c-" + c.pod, pod, cf);
    ASSERT_TRUE(add.ok()) << add.describe();
    auto result = add.json();
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(std::string((*result)["ips"][0]["address"].GetString()), c.want);
    auto link = link_in(pod_name(c.pod), kIfname);
    ASSERT_TRUE(link);
    EXPECT_EQ(link->ipv4, std::vector<std::string>{c.want});
    EXPECT_TRUE(call("DEL", "c-" + c.pod, pod, cf).ok());
    EXPECT_FALSE(link_in(pod_name(c.pod), kIfname));
  }
}

TEST_F(CniPluginNetns, AbsentDeviceIdIsNamedAndNothingIsCreated) {
  const std::string pod = add_pod("pod");
  struct Case {
    std::string key, value, named;
  } cases[] = {
      {"deviceID", "\"0000:aa:00.0\"", "deviceID 0000:aa:00.0"},
      {"pciBusID", "\"0000:ab:00.1\"", "pciBusID 0000:ab:00.1"},
      {"runtimeConfig", "{\"deviceID\":\"0000:ac:00.2\"}", "runtimeConfig.deviceID 0000:ac:00.2"},
      // A VMD domain: config validation and ADD read it alike (common/hw_address.h).
      {"deviceID", "\"10000:ad:00.0\"", "deviceID 10000:ad:00.0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.key);
    Conf cf = conf();
    cf.erase("master").set(c.key, c.value);
    CniReply add = call("ADD", "c1", pod, cf);
    EXPECT_FALSE(add.ok());
    EXPECT_TRUE(add.code() == 7 || add.code() >= 100) << add.describe();
    EXPECT_TRUE(contains(add.msg(), c.named)) << add.msg();
    EXPECT_TRUE(contains(add.msg(), "not in /sys/bus/pci/devices")) << add.msg();
    expect_no_attachment("c1", pod_name("pod"));
  }
}

TEST_F(CniPluginNetns, MtuIsAppliedAndReported) {
  const std::string pod = add_pod("pod");
  Conf cf = conf("1.1.0");
  cf.set("mtu", "1400");
  CniReply add = call("ADD", "c1", pod, cf);
  ASSERT_TRUE(add.ok()) << add.describe();
  auto result = add.json();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)["interfaces"][0]["mtu"].GetInt(), 1400);
  auto link = link_in(pod_name("pod"), kIfname);
  ASSERT_TRUE(link);
  EXPECT_EQ(link->mtu, 1400);
  // The parent keeps its own MTU.
  EXPECT_EQ(link_in(host_, parent_).value().mtu, 1500);
}

TEST_F(CniPluginNetns, MtuAboveTheParentsIsRefusedBeforeAnythingIsCreated) {
  const std::string pod = add_pod("pod");
  Conf cf = conf();
  cf.set("mtu", "9000");
  CniReply add = call("ADD", "c1", pod, cf);
  EXPECT_EQ(add.code(), 7) << add.describe();
  EXPECT_TRUE(contains(add.msg(), "mtu")) << add.msg();
  EXPECT_TRUE(contains(add.msg(), "1500")) << "names the parent's MTU: " << add.msg();
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
}

TEST_F(CniPluginNetns, MacvlanModesAreAppliedAndPassthruTakesTheParentAlone) {
  for (std::string mode : {"private", "vepa"}) {
    SCOPED_TRACE(mode);
    const std::string pod = add_pod(mode);
    Conf cf = conf();
    cf.set("macvlanMode", json_string(mode));
    ASSERT_TRUE(call("ADD", "c-" + mode, pod, cf).ok());
    auto link = link_in(pod_name(mode), kIfname);
    ASSERT_TRUE(link);
    EXPECT_EQ(link->macvlan_mode, mode);
    EXPECT_TRUE(call("DEL", "c-" + mode, pod, cf).ok());
  }

  Conf passthru = conf();
  passthru.set("macvlanMode", "\"passthru\"");
  const std::string first = add_pod("pt1"), second = add_pod("pt2");
  ASSERT_TRUE(call("ADD", "c-pt1", first, passthru).ok());
  auto link = link_in(pod_name("pt1"), kIfname);
  ASSERT_TRUE(link);
  EXPECT_EQ(link->macvlan_mode, "passthru");

  // The kernel allows one passthru macvlan per parent: the second ADD fails cleanly.
  CniReply refused = call("ADD", "c-pt2", second, passthru);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.code(), -1) << "an error object on stdout: " << refused.describe();
  EXPECT_TRUE(contains(refused.msg(), parent_)) << refused.msg();
  EXPECT_TRUE(contains(refused.describe(), "passthru macvlan must be its parent's only"))
      << refused.describe();
  EXPECT_EQ(link_names(pod_name("pt2")), std::vector<std::string>{"lo"});
  expect_no_attachment("c-pt2", pod_name("pt2"));
  // ... and the first one is untouched.
  EXPECT_TRUE(link_in(pod_name("pt1"), kIfname));
  EXPECT_TRUE(has_allocation("c-pt1"));
  EXPECT_TRUE(call("DEL", "c-pt1", first, passthru).ok());
}

TEST_F(CniPluginNetns, GidCheckRequireOnAParentWithoutRdmaIsRefusedFirst) {
  const std::string pod = add_pod("pod");
  Conf cf = conf();
  cf.set("gidCheck", "\"require\"");
  CniReply add = call("ADD", "c1", pod, cf);
  EXPECT_EQ(add.code(), 7) << add.describe();
  EXPECT_TRUE(contains(add.msg(), "gidCheck")) << add.msg();
  EXPECT_TRUE(contains(add.msg(), parent_)) << add.msg();
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
  // The default is "require" too.
  cf.erase("gidCheck");
  EXPECT_EQ(call("ADD", "c1", pod, cf).code(), 7);
}

// "warn" goes on where "require" refuses, and says so on stderr (the runtime's log).
TEST_F(CniPluginNetns, GidCheckWarnOnAParentWithoutRdmaWarnsAndSucceeds) {
  const std::string pod = add_pod("pod");
  Conf cf = conf();
  cf.set("gidCheck", "\"warn\"");
  CniReply add = call("ADD", "c1", pod, cf);
  ASSERT_TRUE(add.ok()) << add.describe();
  EXPECT_TRUE(
      contains(add.stderr_text, "gidCheck \"warn\": the parent " + parent_ + " has no RDMA device"))
      << add.describe();
  EXPECT_TRUE(call("DEL", "c1", pod, cf).ok());
}

// --- 3. the device-info file ---

// A veth has neither a PCI function nor an RDMA device, and a "pci" record without a
// PCI address is invalid: nothing is made up and no file is written. (Parents that have
// them are covered by the vm tier on rxe and by the device-info unit tests.)
TEST_F(CniPluginNetns, DeviceInfoIsNotWrittenForAParentWithNothingToDescribe) {
  const std::string pod = add_pod("pod");
  const std::string info = dir_ + "/devinfo/rdma-net1.json";
  Conf cf = conf();
  cf.set("runtimeConfig", "{\"CNIDeviceInfoFile\":" + json_string(info) + "}");
  CniReply add = call("ADD", "c1", pod, cf);
  ASSERT_TRUE(add.ok()) << add.describe();
  EXPECT_FALSE(fs::exists(info));
  ASSERT_TRUE(call("DEL", "c1", pod, cf).ok());
  EXPECT_FALSE(fs::exists(info));
}

// The device plugin's file is not ours: with nothing to add (a veth parent) ADD leaves it
// byte for byte, and DEL does not remove it. Merging into it is unit-tested.
TEST_F(CniPluginNetns, ExistingDeviceInfoFileIsLeftAloneAndOutlivesDel) {
  const std::string pod = add_pod("pod");
  const std::string info = dir_ + "/rdma-net1.json";
  const std::string written =
      R"({"type":"pci","version":"1.0.0","pci":{"pci-address":"0000:3b:00.2",)"
      R"("pf-pci-address":"0000:3b:00.0"},"network-plugin":"sriov-device-plugin"})";
  {
    std::ofstream out(info);
    out << written;
  }
  Conf cf = conf();
  cf.set("runtimeConfig", "{\"CNIDeviceInfoFile\":" + json_string(info) + "}");
  ASSERT_TRUE(call("ADD", "c1", pod, cf).ok());
  EXPECT_EQ(read_text(info), written);
  ASSERT_TRUE(call("DEL", "c1", pod, cf).ok());
  ASSERT_TRUE(fs::exists(info)) << "the device plugin's file is not ours to delete";
  EXPECT_EQ(read_text(info), written);
}

// --- 4. logging ---

TEST_F(CniPluginNetns, LogFileGetsTheLinesAndStdoutStaysOneDocument) {
  const std::string pod = add_pod("pod");
  const std::string log = dir_ + "/fabric-cni.log";
  Conf cf = conf();
  cf.set("logFile", json_string(log)).set("logLevel", "\"debug\"");
  CniReply add = call("ADD", "c1", pod, cf);
  ASSERT_TRUE(add.ok()) << add.describe();
  // json() parses the whole of stdout: anything after the document fails it.
  auto doc = add.json();
  ASSERT_TRUE(doc.ok()) << doc.error().message() << "\n" << add.stdout_text;
  EXPECT_TRUE(doc->IsObject() && doc->HasMember("interfaces"));

  Conf clash = cf; // the same ifname again in the same pod: an error, logged
  CniReply failed = call("ADD", "c2", pod, clash);
  EXPECT_FALSE(failed.ok());
  ASSERT_TRUE(failed.json().ok()) << failed.stdout_text;
  EXPECT_NE(failed.code(), -1);
  ASSERT_TRUE(call("DEL", "c1", pod, cf).ok());

  std::string text = read_text(log);
  EXPECT_TRUE(contains(text, "ADD container=c1 ifname=net1")) << text;
  EXPECT_TRUE(contains(text, "DEL container=c1")) << text;
  EXPECT_TRUE(contains(text, failed.msg())) << "the error reaches the log too:\n" << text;
}

// --- 5. a failure at each ADD step leaves nothing behind ---

TEST_F(CniPluginNetns, ExhaustedIpamRangeLeavesNothing) {
  const std::string pod_a = add_pod("pa"), pod_b = add_pod("pb");
  Conf cf = conf();
  // A /30 whose only usable address is the range's single one.
  cf.set("ipam",
         host_local("10.9.5.0/30", ",\"rangeStart\":\"10.9.5.2\",\"rangeEnd\":\"10.9.5.2\""));
  ASSERT_TRUE(call("ADD", "taker", pod_a, cf).ok());
  ASSERT_EQ(allocations(), (std::map<std::string, std::string>{{"10.9.5.2", "taker"}}));

  CniReply add = call("ADD", "c1", pod_b, cf);
  EXPECT_FALSE(add.ok());
  EXPECT_NE(add.code(), -1) << add.describe();
  EXPECT_TRUE(contains(add.msg(), "no IP addresses available")) << add.msg();
  EXPECT_EQ(link_names(pod_name("pb")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pb"));
  EXPECT_EQ(allocations(), (std::map<std::string, std::string>{{"10.9.5.2", "taker"}}));
}

TEST_F(CniPluginNetns, NameCollisionInThePodLeavesTheOtherLinkAlone) {
  const std::string pod = add_pod("pod");
  // Another plugin's interface (a veth, as the default network's) already has the name.
  run_ip({"-n", pod_name("pod"), "link", "add", kIfname, "type", "veth", "peer", "name", "peer1"});
  CniReply add = call("ADD", "c1", pod, conf());
  EXPECT_EQ(add.code(), 101) << add.describe();
  EXPECT_TRUE(contains(add.msg(), "CNI_IFNAME")) << add.msg();
  EXPECT_TRUE(contains(add.msg(), kIfname)) << add.msg();
  auto other = link_in(pod_name("pod"), kIfname);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->kind, "veth");
  EXPECT_EQ(link_names(pod_name("pod")), (std::vector<std::string>{"lo", kIfname, "peer1"}));
  expect_no_attachment("c1", pod_name("pod"));
  // DEL must not take the veth for ours either.
  EXPECT_TRUE(call("DEL", "c1", pod, conf()).ok());
  EXPECT_TRUE(link_in(pod_name("pod"), kIfname));
}

TEST_F(CniPluginNetns, MissingPodNamespaceLeavesNothing) {
  const std::string gone = "/var/run/netns/" + net_.ns_name("gone");
  CniReply add = call("ADD", "c1", gone, conf());
  EXPECT_FALSE(add.ok());
  EXPECT_EQ(add.code(), 100) << add.describe();
  EXPECT_TRUE(contains(add.msg(), "CNI_NETNS")) << add.msg();
  EXPECT_TRUE(contains(add.msg(), gone)) << add.msg();
  expect_no_attachment("c1", "");
}

TEST_F(CniPluginNetns, InvalidStaticAddressRollsBackTheMacvlan) {
  const std::string pod = add_pod("pod");
  Conf cf = conf();
  cf.set("ipam", static_ipam("10.9.1.300/24"));
  CniReply add = call("ADD", "c1", pod, cf);
  EXPECT_FALSE(add.ok());
  EXPECT_NE(add.code(), -1) << add.describe();
  EXPECT_TRUE(contains(add.msg(), "10.9.1.300/24")) << add.msg();
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
}

// --- 6. DEL is best effort ---

TEST_F(CniPluginNetns, DelAfterThePodNamespaceIsGoneReleasesTheAddress) {
  const std::string pod = add_pod("pod");
  ASSERT_TRUE(call("ADD", "c1", pod, conf()).ok());
  ASSERT_TRUE(has_allocation("c1"));
  run_ip({"netns", "del", pod_name("pod")});
  CniReply del = call("DEL", "c1", pod, conf());
  EXPECT_TRUE(del.ok()) << del.describe();
  expect_no_attachment("c1", "");
}

TEST_F(CniPluginNetns, DelWithEmptyNetnsStillRemovesTheLinkAndAddress) {
  const std::string pod = add_pod("pod");
  ASSERT_TRUE(call("ADD", "c1", pod, conf()).ok());
  CniReply del = call("DEL", "c1", "", conf());
  EXPECT_TRUE(del.ok()) << del.describe();
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
}

TEST_F(CniPluginNetns, DelWithoutStateReleasesWhatTheConfigNames) {
  const std::string pod = add_pod("pod");
  ASSERT_TRUE(call("ADD", "c1", pod, conf()).ok());
  ASSERT_TRUE(fs::remove(state_path("c1")));
  CniReply del = call("DEL", "c1", pod, conf());
  EXPECT_TRUE(del.ok()) << del.describe();
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
}

TEST_F(CniPluginNetns, DelWithoutAnyAddSucceeds) {
  const std::string pod = add_pod("pod");
  CniReply del = call("DEL", "never-added", pod, conf());
  EXPECT_TRUE(del.ok()) << del.describe();
  EXPECT_EQ(del.stdout_text, "");
  expect_no_attachment("never-added", pod_name("pod"));
}

// The dhcp plugin releases its lease through the pod's interface, so IPAM DEL must run
// before the interface goes. An IPAM "plugin" that notes whether CNI_IFNAME exists in
// CNI_NETNS and then hands over to the real host-local observes the order.
TEST_F(CniPluginNetns, DelReleasesTheAddressWhileThePodInterfaceStillExists) {
  const std::string pod = add_pod("pod");
  const std::string plugins = dir_ + "/plugins", seen = dir_ + "/seen";
  fs::create_directories(plugins);
  {
    std::ofstream script(plugins + "/witness");
    script << "#!/bin/sh\n"
           << "if [ \"$CNI_COMMAND\" = DEL ]; then\n"
           << "  if nsenter --net=\"$CNI_NETNS\" ip link show \"$CNI_IFNAME\" >/dev/null 2>&1\n"
           << "  then\n"
           << "    echo present >>" << seen << "\n"
           << "  else\n"
           << "    echo absent >>" << seen << "\n"
           << "  fi\n"
           << "fi\n"
           << "exec /usr/lib/cni/host-local\n";
  }
  fs::permissions(plugins + "/witness", fs::perms::owner_all);
  Conf c = conf();
  std::string ipam = host_local();
  ipam.replace(ipam.find("host-local"), std::string("host-local").size(), "witness");
  c.set("ipam", ipam);
  CniCall add;
  add.command = "ADD";
  add.container_id = "c1";
  add.netns = pod;
  add.ifname = kIfname;
  add.path = plugins + ":/usr/lib/cni";
  add.config = c.str();
  ASSERT_TRUE(run(add).ok());
  CniCall del = add;
  del.command = "DEL";
  CniReply reply = run(del);
  EXPECT_TRUE(reply.ok()) << reply.describe();
  EXPECT_EQ(read_text(seen), "present\n");
  expect_no_attachment("c1", pod_name("pod"));
}

// --- 7. many pods at once on one parent ---

TEST_F(CniPluginNetns, FiftyPodsAddAndDelConcurrently) {
  constexpr int kPods = 50;
  std::vector<std::string> pods, ids;
  for (int i = 0; i < kPods; ++i) {
    pods.push_back(add_pod("c" + std::to_string(i)));
    ids.push_back("pod" + std::to_string(i));
  }
  const Conf cf = conf();
  auto all = [&](const std::string& command) {
    std::vector<CniReply> replies(kPods);
    std::vector<std::thread> threads;
    for (int i = 0; i < kPods; ++i) {
      threads.emplace_back([&, i] {
        CniCall cc;
        cc.command = command;
        cc.container_id = ids[i];
        cc.netns = pods[i];
        cc.ifname = kIfname;
        cc.config = cf.str();
        cc.timeout = std::chrono::seconds(45); // bounded: a hung plugin fails the test
        auto r = runtime_->run(cc);
        if (r.ok()) {
          replies[i] = std::move(*r);
        } else {
          replies[i].stderr_text = r.error().message();
        }
      });
    }
    for (auto& t : threads)
      t.join();
    return replies;
  };

  auto added = all("ADD");
  std::set<std::string> addresses;
  for (int i = 0; i < kPods; ++i) {
    ASSERT_TRUE(added[i].ok()) << ids[i] << ": " << added[i].describe();
    auto doc = added[i].json();
    ASSERT_TRUE(doc.ok());
    addresses.insert((*doc)["ips"][0]["address"].GetString());
    auto link = link_in(pod_name("c" + std::to_string(i)), kIfname);
    ASSERT_TRUE(link) << ids[i];
    EXPECT_EQ(link->ipv4.size(), 1u);
  }
  EXPECT_EQ(addresses.size(), static_cast<size_t>(kPods)) << "every pod has its own address";
  EXPECT_EQ(allocations().size(), static_cast<size_t>(kPods));
  EXPECT_EQ(state_files().size(), static_cast<size_t>(kPods));

  auto deleted = all("DEL");
  for (int i = 0; i < kPods; ++i) {
    EXPECT_TRUE(deleted[i].ok()) << ids[i] << ": " << deleted[i].describe();
    EXPECT_EQ(link_names(pod_name("c" + std::to_string(i))), std::vector<std::string>{"lo"});
  }
  EXPECT_TRUE(allocations().empty());
  EXPECT_TRUE(state_files().empty());
  EXPECT_EQ(link_names(host_), host_links_);
}

// --- 8. validation ---

TEST_F(CniPluginNetns, ContainerIdsThatEscapeAreRefusedAndNothingIsWritten) {
  const std::string pod = add_pod("pod");
  // From <stateDir>/networks/rdma/, four levels up is /tmp: where a record would land if
  // the ID became part of its path unchecked.
  for (std::string id : {"../../../../escape", "abc/../../../../../escape", "..", "a:b"}) {
    SCOPED_TRACE(id);
    for (const char* command : {"ADD", "DEL"}) {
      CniReply r = call(command, id, pod, conf());
      EXPECT_EQ(r.code(), 4) << r.describe();
      EXPECT_TRUE(contains(r.msg(), "CNI_CONTAINERID")) << r.msg();
    }
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "not even stateDir was created";
  EXPECT_FALSE(fs::exists("/tmp/escape:net1.json"));
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
}

TEST_F(CniPluginNetns, OverlongIfnameIsRefusedNamingIt) {
  const std::string pod = add_pod("pod");
  CniReply r = call("ADD", "c1", pod, conf(), "", "net0123456789abc");
  EXPECT_EQ(r.code(), 4) << r.describe();
  EXPECT_TRUE(contains(r.msg(), "CNI_IFNAME")) << r.msg();
  EXPECT_TRUE(fs::is_empty(dir_));
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
}

TEST_F(CniPluginNetns, MalformedJsonIsCode6WithLineAndColumn) {
  const std::string pod = add_pod("pod");
  CniCall cc;
  cc.command = "ADD";
  cc.container_id = "c1";
  cc.netns = pod;
  cc.ifname = kIfname;
  cc.config = "{\"cniVersion\": \"1.0.0\",\n \"name\": \"rdma\" \"type\": \"fabric-cni\"}";
  CniReply r = run(cc);
  EXPECT_EQ(r.code(), 6) << r.describe();
  EXPECT_TRUE(contains(r.msg(), "line 2, column")) << r.msg();
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(CniPluginNetns, WrongFieldTypesAreCode7NamingTheField) {
  const std::string pod = add_pod("pod");
  struct Case {
    std::string key, value;
  } cases[] = {{"mtu", "\"1500\""}, {"master", "5"}, {"gidTimeoutMs", "true"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.key);
    Conf cf = conf();
    cf.set(c.key, c.value);
    CniReply r = call("ADD", "c1", pod, cf);
    EXPECT_EQ(r.code(), 7) << r.describe();
    EXPECT_EQ(r.msg().rfind(c.key, 0), 0u) << "names " << c.key << " first: " << r.msg();
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(CniPluginNetns, UnsupportedOrMissingCniVersionIsCode1) {
  const std::string pod = add_pod("pod");
  for (std::string version : {"0.2.0", "2.0.0", "bogus"}) {
    Conf cf = conf();
    cf.set("cniVersion", json_string(version));
    CniReply r = call("ADD", "c1", pod, cf);
    EXPECT_EQ(r.code(), 1) << r.describe();
    EXPECT_TRUE(contains(r.msg(), "cniVersion")) << r.msg();
  }
  Conf missing = conf();
  missing.erase("cniVersion");
  CniReply r = call("ADD", "c1", pod, missing);
  EXPECT_EQ(r.code(), 1) << r.describe();
  EXPECT_TRUE(contains(r.msg(), "cniVersion")) << r.msg();
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(CniPluginNetns, VersionListsTheFiveSupportedVersions) {
  CniCall cc;
  cc.command = "VERSION";
  cc.config = "{\"cniVersion\":\"1.0.0\"}";
  CniReply r = run(cc);
  ASSERT_TRUE(r.ok()) << r.describe();
  auto doc = r.json();
  ASSERT_TRUE(doc.ok());
  std::vector<std::string> versions;
  for (const auto& v : (*doc)["supportedVersions"].GetArray())
    versions.push_back(v.GetString());
  EXPECT_EQ(versions, (std::vector<std::string>{"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}));
}

// --- 9. STATUS and GC (1.1.0) ---

TEST_F(CniPluginNetns, StatusFollowsTheParent) {
  CniCall cc;
  cc.command = "STATUS";
  cc.config = conf("1.1.0").str();
  CniReply up = run(cc);
  EXPECT_TRUE(up.ok()) << up.describe();
  EXPECT_EQ(up.stdout_text, "");

  run_ip({"-n", host_, "link", "set", parent_, "down"});
  CniReply down = run(cc);
  EXPECT_EQ(down.code(), 50) << down.describe();
  EXPECT_TRUE(contains(down.msg(), parent_)) << down.msg();

  run_ip({"-n", host_, "link", "del", parent_});
  CniReply missing = run(cc);
  EXPECT_EQ(missing.code(), 50) << missing.describe();
  EXPECT_TRUE(contains(missing.msg(), parent_)) << missing.msg();
}

TEST_F(CniPluginNetns, GcReleasesOnlyTheAttachmentsNotListed) {
  const std::string keep = add_pod("keep"), stale = add_pod("stale");
  const Conf cf = conf("1.1.0");
  ASSERT_TRUE(call("ADD", "c-keep", keep, cf).ok());
  ASSERT_TRUE(call("ADD", "c-stale", stale, cf).ok());
  ASSERT_EQ(allocations().size(), 2u);

  Conf gc = cf;
  gc.set("cni.dev/valid-attachments", "[{\"containerID\":\"c-keep\",\"ifname\":\"net1\"}]");
  CniCall cc;
  cc.command = "GC";
  cc.config = gc.str();
  CniReply r = run(cc);
  EXPECT_TRUE(r.ok()) << r.describe();

  EXPECT_FALSE(link_in(pod_name("stale"), kIfname)) << "the stale macvlan is deleted";
  EXPECT_FALSE(has_allocation("c-stale"));
  EXPECT_FALSE(fs::exists(state_path("c-stale")));

  auto kept = link_in(pod_name("keep"), kIfname);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->ipv4, std::vector<std::string>{"10.9.0.2/24"});
  EXPECT_TRUE(has_allocation("c-keep"));
  EXPECT_TRUE(fs::exists(state_path("c-keep")));
}

// --- 10. CHECK notices what changed ---

TEST_F(CniPluginNetns, CheckNamesARemovedAddressAndAChangedMtu) {
  const std::string pod = add_pod("pod");
  const Conf cf = conf();
  CniReply add = call("ADD", "c1", pod, cf);
  ASSERT_TRUE(add.ok()) << add.describe();
  Conf check = cf;
  check.set("prevResult", add.stdout_text);
  ASSERT_TRUE(call("CHECK", "c1", pod, check).ok());

  run_ip({"-n", pod_name("pod"), "link", "set", kIfname, "mtu", "1400"});
  CniReply mtu = call("CHECK", "c1", pod, check);
  EXPECT_FALSE(mtu.ok());
  EXPECT_NE(mtu.code(), -1) << mtu.describe();
  EXPECT_TRUE(contains(mtu.msg(), "MTU 1400")) << mtu.msg();
  run_ip({"-n", pod_name("pod"), "link", "set", kIfname, "mtu", "1500"});
  EXPECT_TRUE(call("CHECK", "c1", pod, check).ok());

  run_ip({"-n", pod_name("pod"), "addr", "del", "10.9.0.2/24", "dev", kIfname});
  CniReply addr = call("CHECK", "c1", pod, check);
  EXPECT_FALSE(addr.ok());
  EXPECT_NE(addr.code(), -1) << addr.describe();
  EXPECT_TRUE(contains(addr.msg(), "10.9.0.2/24")) << addr.msg();
}

} // namespace
} // namespace fabric::testing
