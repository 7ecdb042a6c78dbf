// IPAM delegation against the real reference plugins (/usr/lib/cni/host-local and static:
// they only write files under a dataDir), plus small executables standing in for plugins
// that misbehave in ways the reference ones do not (hanging, garbage, code 11).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "cni/ipam.h"
#include "cni/version.h"

namespace fabric::cni {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPluginDir = "/usr/lib/cni";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class IpamTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (access((std::string(kPluginDir) + "/host-local").c_str(), X_OK) != 0) {
      GTEST_SKIP() << kPluginDir << "/host-local is not installed (Debian package "
                   << "containernetworking-plugins); the IPAM delegation tests need it";
    }
    std::string pattern = (fs::temp_directory_path() / "fabric-ipam-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // host-local with a range of exactly one address, so that "freed" is observable: the
  // next ADD can only succeed by getting the same address back.
  std::string host_local_conf(const std::string& version, int net,
                              const std::string& extra = "") const {
    std::string subnet = "10.9." + std::to_string(net) + ".0/24";
    std::string only = "10.9." + std::to_string(net) + ".5";
    return R"({"cniVersion": ")" + version + R"(", "name": "roce-plane", "type": "fabric-cni",
      "master": "eth1", "ipam": {"type": "host-local", "ranges": [[{"subnet": ")" +
           subnet + R"(", "rangeStart": ")" + only + R"(", "rangeEnd": ")" + only +
           R"("}]], "dataDir": ")" + (dir_ / "leases").string() + R"("})" + extra + "}";
  }

  IpamInvocation invocation(const std::string& conf, const std::string& container_id,
                            const std::string& type = "host-local") const {
    IpamInvocation inv;
    inv.type = type;
    inv.path = {(dir_ / "bin").string(), kPluginDir};
    inv.stdin_text = conf;
    inv.env = {{"CNI_CONTAINERID", container_id},
               {"CNI_NETNS", (dir_ / "netns").string()}, // host-local never opens it
               {"CNI_IFNAME", "net1"},
               {"CNI_PATH", (dir_ / "bin").string() + ":" + kPluginDir}};
    return inv;
  }

  // A stand-in plugin in the first CNI_PATH directory.
  void write_plugin(const std::string& name, const std::string& script) const {
    fs::create_directories(dir_ / "bin");
    fs::path path = dir_ / "bin" / name;
    std::ofstream(path) << "#!/bin/sh\n" << script;
    fs::permissions(path, fs::perms::owner_all);
  }

  fs::path dir_;
};

TEST_F(IpamTest, AddReturnsTheAddressAndDelFreesItInEveryVersion) {
  int net = 0;
  for (const auto& version : supported_versions()) {
    SCOPED_TRACE(version);
    ++net;
    std::string conf = host_local_conf(version, net);
    std::string address = "10.9." + std::to_string(net) + ".5";

    auto first = ipam_add(invocation(conf, "ctr-a"));
    ASSERT_TRUE(first.ok()) << first.error().message();
    ASSERT_EQ(first->ips.size(), 1u);
    EXPECT_EQ(first->ips[0].address, address + "/24");
    EXPECT_EQ(first->ips[0].gateway, "10.9." + std::to_string(net) + ".1");
    // host-local 1.1.1 stops at 1.0.0: a 1.1.0 configuration is delegated as 1.0.0.
    EXPECT_EQ(first->cni_version, version == "1.1.0" ? "1.0.0" : version);
    EXPECT_NE(read_file(dir_ / "leases" / "roce-plane" / address).find("ctr-a"), std::string::npos)
        << "host-local recorded the lease for our container";

    DelegatedFailure failure;
    auto exhausted = ipam_add(invocation(conf, "ctr-b"), &failure);
    ASSERT_FALSE(exhausted.ok());
    EXPECT_NE(exhausted.error().message().find("IPAM plugin host-local ADD"), std::string::npos);
    EXPECT_NE(exhausted.error().message().find("no IP addresses available"), std::string::npos)
        << exhausted.error().message();
    EXPECT_EQ(failure.code, 999) << "the plugin's own code, for passing on";

    ASSERT_TRUE(ipam_run(invocation(conf, "ctr-a"), Command::kDel).ok());
    auto second = ipam_add(invocation(conf, "ctr-b"));
    ASSERT_TRUE(second.ok()) << second.error().message();
    EXPECT_EQ(second->ips.at(0).address, address + "/24") << "DEL gave the address back";
    auto again = ipam_run(invocation(conf, "ctr-a"), Command::kDel);
    EXPECT_TRUE(again.ok()) << "DEL is idempotent: " << again.error().message();
  }
}

TEST_F(IpamTest, CheckFollowsTheAllocation) {
  std::string conf = host_local_conf(
      "1.1.0", 20,
      R"(, "prevResult": {"cniVersion": "1.1.0", "ips": [{"address": "10.9.20.5/24"}]})");
  ASSERT_TRUE(ipam_add(invocation(conf, "ctr-a")).ok());
  auto check = ipam_run(invocation(conf, "ctr-a"), Command::kCheck);
  EXPECT_TRUE(check.ok()) << check.error().message();
  ASSERT_TRUE(ipam_run(invocation(conf, "ctr-a"), Command::kDel).ok());
  auto gone = ipam_run(invocation(conf, "ctr-a"), Command::kCheck);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message().find("ctr-a"), std::string::npos) << gone.error().message();
}

TEST_F(IpamTest, CniArgsReachThePlugin) {
  std::string conf = R"({"cniVersion": "1.0.0", "name": "roce-plane", "type": "fabric-cni",
    "ipam": {"type": "host-local", "subnet": "10.9.30.0/24", "dataDir": ")" +
                     (dir_ / "leases").string() + R"("}})";
  IpamInvocation inv = invocation(conf, "ctr-a");
  inv.env["CNI_ARGS"] = "IgnoreUnknown=1;K8S_POD_NAMESPACE=training;K8S_POD_NAME=trainer-0;"
                        "IP=10.9.30.77";
  auto r = ipam_add(inv);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->ips.at(0).address, "10.9.30.77/24") << "host-local honoured CNI_ARGS IP=";
}

TEST_F(IpamTest, StaticReturnsAddressesRoutesAndDns) {
  if (access((std::string(kPluginDir) + "/static").c_str(), X_OK) != 0) {
    GTEST_SKIP() << kPluginDir << "/static is not installed";
  }
  std::string conf = R"({"cniVersion": "1.1.0", "name": "roce-plane", "type": "fabric-cni",
    "ipam": {"type": "static",
             "addresses": [{"address": "192.168.50.11/24", "gateway": "192.168.50.1"},
                           {"address": "fd00:50::11/64"}],
             "routes": [{"dst": "10.78.0.0/16", "gw": "192.168.50.1"}],
             "dns": {"nameservers": ["192.168.50.53"], "domain": "fabric.local"}}})";
  auto r = ipam_add(invocation(conf, "ctr-a", "static"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->ips.size(), 2u);
  EXPECT_EQ(r->ips[0].address, "192.168.50.11/24");
  EXPECT_EQ(r->ips[0].gateway, "192.168.50.1");
  EXPECT_EQ(r->ips[1].address, "fd00:50::11/64");
  ASSERT_EQ(r->routes.size(), 1u);
  EXPECT_EQ(r->routes[0].dst, "10.78.0.0/16");
  EXPECT_EQ(r->routes[0].gw, "192.168.50.1");
  EXPECT_EQ(r->dns.nameservers, std::vector<std::string>{"192.168.50.53"});
  EXPECT_EQ(r->dns.domain, "fabric.local");
  EXPECT_TRUE(ipam_run(invocation(conf, "ctr-a", "static"), Command::kDel).ok());
}

TEST_F(IpamTest, PrevResultFollowsTheDelegatedVersion) {
  if (access((std::string(kPluginDir) + "/static").c_str(), X_OK) != 0) {
    GTEST_SKIP() << kPluginDir << "/static is not installed";
  }
  // static's CHECK parses prevResult and refuses one whose cniVersion its result type does
  // not know: delegated as 1.0.0, prevResult must say 1.0.0 too.
  std::string conf = R"({"cniVersion": "1.1.0", "name": "roce-plane", "type": "fabric-cni",
    "ipam": {"type": "static", "addresses": [{"address": "192.168.50.11/24"}]},
    "prevResult": {"cniVersion": "1.1.0", "interfaces": [{"name": "net1", "mtu": 4200}],
                   "ips": [{"address": "192.168.50.11/24", "interface": 0}]}})";
  ASSERT_TRUE(ipam_add(invocation(conf, "ctr-a", "static")).ok());
  auto check = ipam_run(invocation(conf, "ctr-a", "static"), Command::kCheck);
  EXPECT_TRUE(check.ok()) << check.error().message();
}

TEST_F(IpamTest, PluginErrorsArePropagated) {
  std::string conf = R"({"cniVersion": "1.0.0", "name": "roce-plane", "type": "fabric-cni",
    "ipam": {"type": "host-local", "subnet": "not-a-subnet", "dataDir": ")" +
                     (dir_ / "leases").string() + R"("}})";
  DelegatedFailure failure;
  auto r = ipam_add(invocation(conf, "ctr-a"), &failure);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("host-local"), std::string::npos);
  EXPECT_NE(r.error().message().find("not-a-subnet"), std::string::npos) << r.error().message();
  EXPECT_EQ(failure.code, 999);
  EXPECT_NE(failure.msg.find("not-a-subnet"), std::string::npos);
}

TEST_F(IpamTest, GcAndStatusNeedAPluginWith110) {
  std::string conf = host_local_conf("1.1.0", 40, R"(, "cni.dev/valid-attachments": [])");
  for (Command command : {Command::kGc, Command::kStatus}) {
    auto r = ipam_run(invocation(conf, "ctr-a"), command);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported) << r.error().message();
    EXPECT_NE(r.error().message().find("1.0.0"), std::string::npos) << "says what it supports";
  }
  auto old = ipam_run(invocation(host_local_conf("1.0.0", 40), "ctr-a"), Command::kGc);
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.error().code(), ErrorCode::kUnsupported);
}

TEST_F(IpamTest, MissingPluginListsTheDirectoriesSearched) {
  std::string conf = host_local_conf("1.0.0", 50);
  auto r = ipam_add(invocation(conf, "ctr-a", "whereabouts"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("whereabouts"), std::string::npos);
  EXPECT_NE(r.error().message().find((dir_ / "bin").string()), std::string::npos);
  EXPECT_NE(r.error().message().find(kPluginDir), std::string::npos) << r.error().message();

  IpamInvocation no_path = invocation(conf, "ctr-a");
  no_path.path.clear();
  auto empty = ipam_add(no_path);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code(), ErrorCode::kInvalidEnvironment);
  EXPECT_NE(empty.error().message().find("CNI_PATH"), std::string::npos);

  auto traversal = ipam_add(invocation(conf, "ctr-a", "../../bin/sh"));
  ASSERT_FALSE(traversal.ok());
  EXPECT_EQ(traversal.error().code(), ErrorCode::kInvalidConfig);
}

TEST_F(IpamTest, ErrorCodeElevenIsCarried) {
  write_plugin("busy-ipam", R"(cat >/dev/null
echo '{"code": 11, "msg": "datastore busy", "details": "retry in 5s"}'
exit 1
)");
  DelegatedFailure failure;
  auto r = ipam_add(invocation(host_local_conf("1.0.0", 60), "ctr-a", "busy-ipam"), &failure);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(cni_code_for(r.error().code()), 11);
  EXPECT_EQ(r.error().hint(), "retry in 5s");
  EXPECT_EQ(failure.code, 11);
  EXPECT_EQ(failure.msg, "datastore busy");
  EXPECT_EQ(failure.details, "retry in 5s");
}

TEST_F(IpamTest, MisbehavingPluginsAreNamed) {
  write_plugin("garbage-ipam", "cat >/dev/null\necho 'Segmentation fault'\n");
  auto garbage = ipam_add(invocation(host_local_conf("1.0.0", 70), "ctr-a", "garbage-ipam"));
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().message().find("IPAM plugin garbage-ipam ADD"), std::string::npos)
      << garbage.error().message();

  write_plugin("crashing-ipam", "cat >/dev/null\necho 'panic: nil map' >&2\nexit 3\n");
  auto crash =
      ipam_run(invocation(host_local_conf("1.0.0", 70), "ctr-a", "crashing-ipam"), Command::kDel);
  ASSERT_FALSE(crash.ok());
  EXPECT_NE(crash.error().message().find("crashing-ipam"), std::string::npos);
  EXPECT_NE(crash.error().message().find("status 3"), std::string::npos);
  EXPECT_NE(crash.error().message().find("panic: nil map"), std::string::npos)
      << crash.error().message();

  write_plugin("hanging-ipam", "exec sleep 30\n");
  IpamInvocation slow = invocation(host_local_conf("1.0.0", 70), "ctr-a", "hanging-ipam");
  slow.timeout = std::chrono::milliseconds(300);
  auto hang = ipam_add(slow);
  ASSERT_FALSE(hang.ok());
  EXPECT_EQ(hang.error().code(), ErrorCode::kTimeout);
  EXPECT_NE(hang.error().message().find("hanging-ipam"), std::string::npos);
}

// A plugin that allocates (the real host-local does) and then prints a result we cannot
// use: the address must go back, since no record will ever name it for a DEL.
TEST_F(IpamTest, AnUnusableResultIsReleasedNotLeaked) {
  write_plugin("lying-ipam", "if [ \"$CNI_COMMAND\" = ADD ]; then\n"
                             "  /usr/lib/cni/host-local >/dev/null || exit 1\n"
                             "  echo '{\"cniVersion\": \"1.0.0\", \"ips\": [{\"address\": "
                             "\"10.9.71.300/24\"}]}'\n"
                             "  exit 0\n"
                             "fi\n"
                             "exec /usr/lib/cni/host-local\n");
  const std::string conf = host_local_conf("1.0.0", 71);
  auto unusable = ipam_add(invocation(conf, "ctr-a", "lying-ipam"));
  ASSERT_FALSE(unusable.ok());
  EXPECT_NE(unusable.error().message().find("printed an unusable result"), std::string::npos)
      << unusable.error().message();
  EXPECT_NE(unusable.error().message().find("10.9.71.300/24"), std::string::npos)
      << unusable.error().message();
  EXPECT_FALSE(fs::exists(dir_ / "leases" / "roce-plane" / "10.9.71.5"))
      << "the lease host-local wrote for ctr-a was released";
  // The range has one address: another container gets it only if it was given back.
  auto next = ipam_add(invocation(conf, "ctr-b"));
  ASSERT_TRUE(next.ok()) << next.error().message();
  EXPECT_EQ(next->ips.at(0).address, "10.9.71.5/24");
}

// Records what it was given; supports only 0.3.1 and 0.4.0, as an old plugin would.
constexpr const char* kOldPlugin = R"(input=$(cat)
if [ "$CNI_COMMAND" = VERSION ]; then
  echo '{"cniVersion": "0.4.0", "supportedVersions": ["0.3.1", "0.4.0"]}'
  exit 0
fi
case "$input" in
*'"cniVersion":"0.4.0"'*) ;;
*) echo '{"code": 1, "msg": "incompatible CNI versions"}'; exit 1 ;;
esac
printf '%s' "$input" > "$FABRIC_TEST_IPAM_RECORD"
printf '{"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "%s/24"}],
 "dns": {"domain": "%s", "search": ["%s", "%s"]}}' \
  "$FABRIC_TEST_IPAM_ADDRESS" "$CNI_COMMAND" "$CNI_CONTAINERID" "${CNI_IFNAME:-unset}"
)";

class ScopedEnv {
public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

private:
  const char* name_;
};

TEST_F(IpamTest, NegotiatesDownAndReshapesPrevResultForAnOldPlugin) {
  write_plugin("old-ipam", kOldPlugin);
  fs::path record = dir_ / "delegated-stdin.json";
  ScopedEnv record_env("FABRIC_TEST_IPAM_RECORD", record.string());
  ScopedEnv address_env("FABRIC_TEST_IPAM_ADDRESS", "10.3.0.9");
  ScopedEnv stale("CNI_IFNAME", "stale0"); // ours must not leak past the invocation's env

  std::string conf = R"({"cniVersion": "1.0.0", "name": "roce-plane", "type": "fabric-cni",
    "ipam": {"type": "old-ipam"}, "prevResult": {"cniVersion": "1.0.0",
    "ips": [{"address": "10.3.0.9/24", "gateway": "10.3.0.1"}, {"address": "fd00:3::9/64"}]}})";
  IpamInvocation inv = invocation(conf, "ctr-a", "old-ipam");
  inv.env.erase("CNI_IFNAME");
  auto r = ipam_add(inv);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->cni_version, "0.4.0");
  EXPECT_EQ(r->ips.at(0).address, "10.3.0.9/24") << "our environment reached the plugin";
  EXPECT_EQ(r->dns.domain, "ADD");
  EXPECT_EQ(r->dns.search, (std::vector<std::string>{"ctr-a", "unset"}));

  std::string text = read_file(record);
  EXPECT_NE(text.find(R"("cniVersion":"0.4.0")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("version":"4")"), std::string::npos) << "prevResult in 0.4.0 shape";
  EXPECT_NE(text.find(R"("version":"6")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("type":"old-ipam")"), std::string::npos) << "the rest is unchanged";
}

TEST_F(IpamTest, NoCommonVersionIsIncompatible) {
  write_plugin("old-ipam", kOldPlugin);
  std::string conf = R"({"cniVersion": "0.3.0", "name": "roce-plane", "type": "fabric-cni",
    "ipam": {"type": "old-ipam"}})";
  auto r = ipam_add(invocation(conf, "ctr-a", "old-ipam"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kIncompatibleVersion);
  EXPECT_NE(r.error().message().find("0.3.1, 0.4.0"), std::string::npos) << r.error().message();
}

TEST(IpamInvocationFor, UsesTheConfigAndTheRequest) {
  auto conf = parse_netconf(R"({"cniVersion": "1.1.0", "name": "n", "type": "fabric-cni",
    "master": "eth1", "ipam": {"type": "host-local", "subnet": "10.0.0.0/24"}})",
                            Command::kAdd);
  ASSERT_TRUE(conf.ok());
  CniEnv env;
  env.command = Command::kAdd;
  env.container_id = "ctr-a";
  env.netns = "/var/run/netns/pod";
  env.ifname = "net1";
  env.path = {"/opt/cni/bin", "/usr/lib/cni"};
  env.args_text = "IgnoreUnknown=1;IP=10.0.0.7";
  IpamInvocation inv = make_ipam_invocation(*conf, env);
  EXPECT_EQ(inv.type, "host-local");
  EXPECT_EQ(inv.stdin_text, conf->raw);
  EXPECT_EQ(inv.path, env.path);
  EXPECT_EQ(inv.env.at("CNI_ARGS"), "IgnoreUnknown=1;IP=10.0.0.7");
  EXPECT_EQ(inv.env.at("CNI_PATH"), "/opt/cni/bin:/usr/lib/cni");
  EXPECT_EQ(inv.env.at("CNI_NETNS"), "/var/run/netns/pod");
}

} // namespace
} // namespace fabric::cni
