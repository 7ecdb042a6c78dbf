// Shared mode beyond the happy path, the built fabric-cni driven as a runtime drives it:
// DEL without a record deletes only a macvlan this attachment made on the configured
// parent, and the temporary link a killed ADD left; routes are installed as the
// reference plugins install them; a relative logFile is refused before it is written.
#include <signal.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "cni/commands.h"
#include "cni/link_mark.h"
#include "tests/netns/cni/cni_plugin_fixture.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;

// ADD failed because the pod already had CNI_IFNAME: a macvlan, made by another plugin,
// on another parent in one pod and on our very parent in the other. Neither is ours:
// DEL without a record succeeds and leaves both.
TEST_F(CniPluginNetns, DelWithoutStateLeavesOtherPluginsMacvlans) {
  const std::string other_parent = net_.add_veth("o", host_, host_).first;
  const std::string pod_a = add_pod("pa"), pod_b = add_pod("pb");
  run_ip({"-n", host_, "link", "add", "link", other_parent, "name", kIfname, "netns",
          pod_name("pa"), "type", "macvlan"});
  run_ip({"-n", host_, "link", "add", "link", parent_, "name", kIfname, "netns", pod_name("pb"),
          "type", "macvlan"});
  for (const auto& [pod, ns] : {std::pair{pod_a, pod_name("pa")}, {pod_b, pod_name("pb")}}) {
    SCOPED_TRACE(ns);
    CniReply add = call("ADD", "c-" + ns, pod, conf());
    EXPECT_EQ(add.code(), 101) << add.describe();
    CniReply del = call("DEL", "c-" + ns, pod, conf());
    EXPECT_TRUE(del.ok()) << del.describe();
    auto kept = link_in(ns, kIfname);
    ASSERT_TRUE(kept) << "DEL deleted a macvlan it did not make";
    EXPECT_EQ(kept->kind, "macvlan");
    EXPECT_FALSE(has_allocation("c-" + ns));
  }
}

// An ADD killed between creating the macvlan and renaming it leaves it under its
// temporary name: DEL without a record removes it, but not a link of that name on
// another parent.
TEST_F(CniPluginNetns, DelWithoutStateRemovesTheTemporaryLinkAKilledAddLeft) {
  const std::string other_parent = net_.add_veth("o", host_, host_).first;
  const std::string pod = add_pod("pod"), other = add_pod("other");
  const std::string temp = cni::temporary_link_name("c1", kIfname);
  run_ip({"-n", host_, "link", "add", "link", parent_, "name", temp, "netns", pod_name("pod"),
          "type", "macvlan"});
  run_ip({"-n", host_, "link", "add", "link", other_parent, "name", temp, "netns",
          pod_name("other"), "type", "macvlan"});
  CniReply del = call("DEL", "c1", pod, conf());
  EXPECT_TRUE(del.ok()) << del.describe();
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  EXPECT_TRUE(call("DEL", "c1", other, conf()).ok());
  EXPECT_TRUE(link_in(pod_name("other"), temp)) << "not on the configured parent: not ours";
}

// Killed while IPAM answered: the macvlan is in the pod as CNI_IFNAME with its mark, the
// address allocated, no record. DEL releases both.
TEST_F(CniPluginNetns, AnAddKilledDuringIpamIsReleasedByDelWithoutState) {
  add_gate();
  const std::string pod = add_pod("pod");
  const Conf cf = gated(conf());
  std::thread add([&] { call("ADD", "c1", pod, cf); });
  auto pids = wait_for_gate();
  ASSERT_TRUE(pids) << "the ADD never reached IPAM";
  ::kill(pids->first, SIGKILL);
  ::kill(pids->second, SIGKILL);
  add.join();
  auto left = link_in(pod_name("pod"), kIfname);
  ASSERT_TRUE(left);
  EXPECT_TRUE(cni::marks_attachment(left->alias, "c1", kIfname)) << left->alias;
  ASSERT_TRUE(has_allocation("c1"));
  ASSERT_FALSE(fs::exists(state_path("c1")));

  CniReply del = call("DEL", "c1", pod, cf);
  EXPECT_TRUE(del.ok()) << del.describe();
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
}

// host-local puts the range's gateway on the address and passes {"dst": "0.0.0.0/0"} on
// as written: the default route goes via that gateway, as the reference plugins make it.
TEST_F(CniPluginNetns, ARouteWithoutGwGoesViaTheIpamGateway) {
  const std::string pod = add_pod("pod");
  Conf cf = conf();
  cf.set("ipam", "{\"type\":\"host-local\",\"ranges\":[[{\"subnet\":\"10.9.0.0/24\","
                 "\"gateway\":\"10.9.0.254\"}]],\"routes\":[{\"dst\":\"0.0.0.0/0\"}],"
                 "\"dataDir\":" +
                     json_string(data_dir_) + "}");
  CniReply add = call("ADD", "c1", pod, cf);
  ASSERT_TRUE(add.ok()) << add.describe();
  EXPECT_TRUE(has_route(pod_name("pod"), kIfname, "default", "10.9.0.254"))
      << run_checked({"ip", "-n", pod_name("pod"), "route"}).value_or("");
}

// An IPAM plugin of spec 1.1.0 may ask for a table, a scope, a metric, an MTU and an
// advertised MSS. (Debian's plugins predate those fields; this one prints a fixed result.)
TEST_F(CniPluginNetns, SpecOneOneRouteFieldsAreHonouredAndEchoed) {
  add_ipam_plugin("fixed", R"(if [ "$CNI_COMMAND" = VERSION ]; then
  echo '{"cniVersion":"1.1.0","supportedVersions":["1.0.0","1.1.0"]}'; exit 0
fi
cat >/dev/null
[ "$CNI_COMMAND" = ADD ] || exit 0
echo '{"cniVersion":"1.1.0","ips":[{"address":"10.9.7.5/24","gateway":"10.9.7.1"}],
 "routes":[{"dst":"10.40.0.0/16","table":100,"priority":50},
           {"dst":"10.41.0.0/16","gw":"10.9.7.2","mtu":1400,"advmss":1360},
           {"dst":"10.42.0.0/16","scope":200}]}'
)");
  const std::string pod = add_pod("pod");
  Conf cf = conf("1.1.0");
  cf.set("ipam", "{\"type\":\"fixed\"}");
  CniReply add = call("ADD", "c1", pod, cf);
  ASSERT_TRUE(add.ok()) << add.describe();
  const std::string ns = pod_name("pod");

  auto table = routes_in(ns, kIfname, "100");
  ASSERT_EQ(table.size(), 1u)
      << run_checked({"ip", "-n", ns, "route", "show", "table", "all"}).value_or("");
  EXPECT_EQ(table[0].dst, "10.40.0.0/16");
  EXPECT_EQ(table[0].gateway, "10.9.7.1") << "the gateway of the address";
  EXPECT_EQ(table[0].metric, 50);
  const std::string main =
      run_checked({"ip", "-n", ns, "route", "show", "dev", kIfname}).value_or("");
  EXPECT_TRUE(contains(main, "10.41.0.0/16 via 10.9.7.2 mtu 1400 advmss 1360")) << main;
  EXPECT_TRUE(contains(main, "10.42.0.0/16 via 10.9.7.1 scope site")) << main;
  EXPECT_FALSE(contains(main, "10.40.0.0/16")) << "table 100's route is not in main";

  auto result = add.json();
  ASSERT_TRUE(result.ok());
  const auto& routes = (*result)["routes"];
  ASSERT_EQ(routes.Size(), 3u);
  EXPECT_EQ(routes[0]["table"].GetInt(), 100);
  EXPECT_EQ(routes[0]["priority"].GetInt(), 50);
  EXPECT_EQ(routes[2]["scope"].GetInt(), 200);
}

// A relative logFile would land wherever the runtime runs its plugins: refused, and
// nothing is created or written.
TEST_F(CniPluginNetns, ARelativeLogFileIsRefusedBeforeAnythingIsWritten) {
  const std::string pod = add_pod("pod");
  const std::string relative = "fabric-cni-relative-" + std::to_string(::getpid()) + ".log";
  Conf cf = conf();
  cf.set("logFile", json_string(relative));
  CniReply add = call("ADD", "c1", pod, cf);
  EXPECT_EQ(add.code(), 7) << add.describe();
  EXPECT_TRUE(contains(add.msg(), "logFile")) << add.msg();
  EXPECT_FALSE(fs::exists(relative)) << "created in the runtime's working directory";
  fs::remove(relative);
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
}

} // namespace
} // namespace fabric::testing
