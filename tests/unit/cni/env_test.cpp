// The CNI_* environment: what each command requires, validation, CNI_ARGS as Multus and
// kubelet send it.
#include <gtest/gtest.h>

#include "cni/env.h"

namespace fabric::cni {
namespace {

using Vars = std::map<std::string, std::string>;

Result<CniEnv> read(const Vars& vars) {
  return read_env([&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

const std::string kContainerId = "3f6940ab5ab43bc522569d15b23f8c1bbde1d7678b080398506924fc01d72755";
const std::string kMultusArgs =
    "IgnoreUnknown=1;K8S_POD_NAMESPACE=training;K8S_POD_NAME=trainer-0;"
    "K8S_POD_INFRA_CONTAINER_ID=" +
    kContainerId + ";K8S_POD_UID=7c1e3f52-5a7b-4f0e-9a0d-3b2c1d0e9f8a;IgnoreUnknown=true;" +
    "MAC=02:00:0a:4d:01:0a;IP=10.77.1.10/16,fd00:77::a/64";

Vars add_vars() {
  return {{"CNI_COMMAND", "ADD"},
          {"CNI_CONTAINERID", kContainerId},
          {"CNI_NETNS", "/var/run/netns/cni-5d1c6c0a"},
          {"CNI_IFNAME", "net1"},
          {"CNI_ARGS", kMultusArgs},
          {"CNI_PATH", "/opt/cni/bin::/usr/lib/cni"}};
}

void expect_names(const Result<CniEnv>& r, const std::string& var) {
  ASSERT_FALSE(r.ok()) << "expected an error naming " << var;
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidEnvironment);
  EXPECT_EQ(cni_code_for(r.error().code()), 4);
  EXPECT_NE(r.error().message().find(var), std::string::npos) << r.error().message();
}

TEST(CniEnv, ReadsAMultusAdd) {
  auto env = read(add_vars());
  ASSERT_TRUE(env.ok()) << env.error().message();
  EXPECT_EQ(env->command, Command::kAdd);
  EXPECT_EQ(env->container_id, kContainerId);
  EXPECT_EQ(env->netns, "/var/run/netns/cni-5d1c6c0a");
  EXPECT_EQ(env->ifname, "net1");
  EXPECT_EQ(env->path, (std::vector<std::string>{"/opt/cni/bin", "/usr/lib/cni"}));
  EXPECT_EQ(env->args.at("K8S_POD_NAME"), "trainer-0");
  EXPECT_EQ(env->args.at("K8S_POD_NAMESPACE"), "training");
  EXPECT_EQ(env->args.at("K8S_POD_INFRA_CONTAINER_ID"), kContainerId);
  EXPECT_EQ(env->args.at("IgnoreUnknown"), "true") << "Multus appends a second one; last wins";
  EXPECT_EQ(env->args.at("MAC"), "02:00:0a:4d:01:0a");
  EXPECT_EQ(env->args.at("IP"), "10.77.1.10/16,fd00:77::a/64");
  EXPECT_EQ(env->args_text, kMultusArgs);
}

TEST(CniEnv, AddAndCheckNeedTheFullSet) {
  for (const char* command : {"ADD", "CHECK"}) {
    for (const char* var : {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"}) {
      Vars vars = add_vars();
      vars["CNI_COMMAND"] = command;
      vars.erase(var);
      expect_names(read(vars), var);
      vars[var] = ""; // empty counts as unset, as in skel
      expect_names(read(vars), var);
    }
  }
}

TEST(CniEnv, MissingVariablesAreNamedTogether) {
  auto r = read({{"CNI_COMMAND", "ADD"}, {"CNI_NETNS", "/proc/1/ns/net"}});
  expect_names(r, "CNI_CONTAINERID, CNI_IFNAME");
}

TEST(CniEnv, DelMayHaveNoNetns) {
  Vars vars = add_vars();
  vars["CNI_COMMAND"] = "DEL";
  vars.erase("CNI_NETNS");
  auto env = read(vars);
  ASSERT_TRUE(env.ok()) << env.error().message();
  EXPECT_TRUE(env->netns.empty());
  vars.erase("CNI_IFNAME");
  expect_names(read(vars), "CNI_IFNAME");
}

TEST(CniEnv, GcNeedsCniPathAndIgnoresAttachmentVariables) {
  expect_names(read({{"CNI_COMMAND", "GC"}}), "CNI_PATH");
  auto env = read({{"CNI_COMMAND", "GC"},
                   {"CNI_PATH", "/opt/cni/bin"},
                   {"CNI_IFNAME", "not/valid"},
                   {"CNI_CONTAINERID", "../x"}});
  ASSERT_TRUE(env.ok()) << env.error().message();
  EXPECT_TRUE(env->container_id.empty());
  EXPECT_TRUE(env->ifname.empty());
  EXPECT_EQ(env->path, std::vector<std::string>{"/opt/cni/bin"});
}

TEST(CniEnv, StatusAndVersionNeedOnlyTheCommand) {
  auto status = read({{"CNI_COMMAND", "STATUS"}});
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->command, Command::kStatus);
  auto version = read({{"CNI_COMMAND", "VERSION"}, {"CNI_ARGS", "garbage"}});
  ASSERT_TRUE(version.ok()) << "VERSION reads nothing else";
  EXPECT_EQ(version->command, Command::kVersion);
}

TEST(CniEnv, CommandMustBeSetAndKnown) {
  expect_names(read({}), "CNI_COMMAND");
  auto r = read({{"CNI_COMMAND", "add"}});
  expect_names(r, "CNI_COMMAND");
  EXPECT_NE(r.error().message().find("'add'"), std::string::npos);
}

TEST(CniEnv, RefusesPathTraversalInContainerIdAndIfname) {
  Vars vars = add_vars();
  vars["CNI_CONTAINERID"] = "../../etc/cron.d";
  expect_names(read(vars), "CNI_CONTAINERID");
  vars = add_vars();
  vars["CNI_IFNAME"] = "../net1";
  expect_names(read(vars), "CNI_IFNAME");
  vars["CNI_IFNAME"] = "sixteen-chars-xx";
  expect_names(read(vars), "CNI_IFNAME");
}

TEST(CniEnv, NetnsMustBeAbsolute) {
  Vars vars = add_vars();
  vars["CNI_NETNS"] = "netns/pod";
  expect_names(read(vars), "CNI_NETNS");
}

TEST(CniEnv, MalformedArgsNameCniArgs) {
  for (const char* bad : {"K8S_POD_NAME", "=value", "A=1;B", "bad key=1", "K\x01=v"}) {
    Vars vars = add_vars();
    vars["CNI_ARGS"] = bad;
    expect_names(read(vars), "CNI_ARGS");
  }
}

TEST(CniEnv, ArgsTolerateEmptySegmentsAndEqualsInValues) {
  auto args = parse_cni_args("IgnoreUnknown=1;;TOKEN=a=b==;");
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->size(), 2u);
  EXPECT_EQ(args->at("TOKEN"), "a=b==");
  EXPECT_TRUE(parse_cni_args("")->empty());
}

TEST(CniEnv, DelegationEnvReadsBackAsTheSameRequest) {
  auto env = read(add_vars());
  ASSERT_TRUE(env.ok());
  Vars vars = delegation_env(*env);
  EXPECT_EQ(vars.count("CNI_COMMAND"), 0u) << "the delegating side picks the command";
  EXPECT_EQ(vars.at("CNI_ARGS"), kMultusArgs) << "passed unchanged, duplicates and all";
  EXPECT_EQ(vars.at("CNI_PATH"), "/opt/cni/bin:/usr/lib/cni");
  vars["CNI_COMMAND"] = "ADD";
  auto again = read(vars);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->container_id, env->container_id);
  EXPECT_EQ(again->netns, env->netns);
  EXPECT_EQ(again->args, env->args);
  EXPECT_EQ(again->path, env->path);
}

} // namespace
} // namespace fabric::cni
