// The procfs fields that tell a process from a later one with the same pid.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <unistd.h>

#include "exporters/nccl_profiler/plugin_config.h"
#include "exporters/nccl_profiler/proc_stat.h"

namespace fabric::nccl_profiler {
namespace {

TEST(ProcStat, StartTicksIsField22) {
  // A real line (python3), fields 3 to 22: state ppid pgrp session tty tpgid flags minflt
  // cminflt majflt cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime.
  EXPECT_EQ(parse_stat_start_ticks("4242 (python3) S 1 4242 4242 0 -1 4194560 2385 0 0 0 12 3 0 0 "
                                   "20 0 9 0 318231 1048576 2048 18446744073709551615"),
            318231u);
  // A command may hold spaces and parentheses: fields count from its last ')'.
  EXPECT_EQ(parse_stat_start_ticks("17 (a) b (c) R 1 17 17 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0"),
            99u);
  EXPECT_EQ(parse_stat_start_ticks("17 (cut) R 1 17"), std::nullopt);
  EXPECT_EQ(parse_stat_start_ticks("no parenthesis"), std::nullopt);
  EXPECT_EQ(parse_stat_start_ticks("1 (x) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 abc"),
            std::nullopt);
}

TEST(ProcStat, PidNamespaceLink) {
  EXPECT_EQ(parse_pid_ns_link("pid:[4026531836]"), 4026531836u);
  EXPECT_EQ(parse_pid_ns_link("net:[4026531836]"), std::nullopt);
  EXPECT_EQ(parse_pid_ns_link("pid:[]"), std::nullopt);
  EXPECT_EQ(parse_pid_ns_link("pid:[12"), std::nullopt);
}

TEST(ProcStat, InnermostNsPid) {
  EXPECT_EQ(parse_status_nspid("Name:\tpython3\nTgid:\t981\nNSpid:\t981\t42\t7\nPPid:\t1\n"), 7);
  EXPECT_EQ(parse_status_nspid("NSpid:\t981\n"), 981);
  EXPECT_EQ(parse_status_nspid("Name:\tx\nPid:\t3\n"), std::nullopt);
}

TEST(ProcStat, OwnIdentityMatchesProc) {
  ProcessIdentity me = own_process_identity();
  EXPECT_EQ(me.pid, ::getpid());
  std::ifstream stat("/proc/self/stat");
  std::stringstream text;
  text << stat.rdbuf();
  EXPECT_EQ(me.start_ticks, parse_stat_start_ticks(text.str()));
  EXPECT_NE(me.start_ticks, 0u);
  char link[64] = {};
  ASSERT_GT(::readlink("/proc/self/ns/pid", link, sizeof link - 1), 0);
  EXPECT_EQ(me.pid_ns, parse_pid_ns_link(link));
}

TEST(PluginConfig, EnvironmentIsCheckedNotTrusted) {
  PluginConfig defaults = config_from_environment(nullptr, nullptr);
  EXPECT_EQ(defaults.dir, "/run/fabric/nccl");
  EXPECT_EQ(defaults.flush_interval, std::chrono::seconds(10));
  EXPECT_TRUE(defaults.warnings.empty());

  PluginConfig set = config_from_environment("/tmp/x", "3");
  EXPECT_EQ(set.dir, "/tmp/x");
  EXPECT_EQ(set.flush_interval, std::chrono::seconds(3));
  EXPECT_TRUE(set.warnings.empty());

  for (const char* bad : {"0", "-1", "3601", "1e3", "10s", "", " 10", "99999999999999"}) {
    PluginConfig c = config_from_environment(nullptr, bad);
    EXPECT_EQ(c.flush_interval, std::chrono::seconds(10)) << bad;
    ASSERT_EQ(c.warnings.size(), 1u) << bad;
    EXPECT_NE(c.warnings[0].find("FABRIC_NCCL_FLUSH_S"), std::string::npos);
  }
  EXPECT_EQ(defaults.events, EventSet::kTimed);
  EXPECT_EQ(config_from_environment(nullptr, nullptr, "counted").events, EventSet::kCounted);
  EXPECT_EQ(config_from_environment(nullptr, nullptr, "timed").events, EventSet::kTimed);
  PluginConfig odd = config_from_environment(nullptr, nullptr, "kernel");
  EXPECT_EQ(odd.events, EventSet::kTimed);
  ASSERT_EQ(odd.warnings.size(), 1u);
  EXPECT_NE(odd.warnings[0].find("FABRIC_NCCL_EVENTS='kernel'"), std::string::npos);

  PluginConfig relative = config_from_environment("run/nccl", nullptr);
  EXPECT_EQ(relative.dir, "/run/fabric/nccl");
  ASSERT_EQ(relative.warnings.size(), 1u);
  EXPECT_NE(relative.warnings[0].find("FABRIC_NCCL_DIR"), std::string::npos);
}

} // namespace
} // namespace fabric::nccl_profiler
