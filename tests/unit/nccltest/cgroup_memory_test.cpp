// The memory cgroup's room, from the text of /proc/self/cgroup, /proc/self/mountinfo and the
// limit files as kernels write them (v1, v2, a hybrid host), and from what a runtime might
// leave there instead: nothing readable is "no limit known", never a crash.
#include "nccltest/cgroup_memory.h"

#include <gtest/gtest.h>

#include <map>

namespace fabric::nccltest {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// A hybrid host (v1 controllers, an empty v2 at /sys/fs/cgroup/unified), as read from a
// process in a v1 memory cgroup of its own.
constexpr const char* kHybridSelf = "9:name=systemd:/\n"
                                    "8:pids:/\n"
                                    "4:memory:/process_api/234b3199a17af0e46c7d9c38430d1d0f\n"
                                    "3:cpuset:/\n"
                                    "2:cpuacct:/\n"
                                    "1:cpu:/\n"
                                    "0::/\n";
constexpr const char* kHybridMountinfo =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

// A pod on a v2 node with a cgroup namespace: its cgroup is "/" and the mount's root is
// the pod container's own cgroup.
constexpr const char* kPodSelf = "0::/\n";
constexpr const char* kPodMountinfo =
    "1437 1436 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime master:9 - cgroup2 "
    "cgroup2 rw,nsdelegate,memory_recursiveprot\n"
    "1438 1436 0:71 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n";

TEST(CgroupMemory, ParsesWhereTheProcessSitsInEachVersion) {
  SelfCgroups hybrid = parse_self_cgroups(kHybridSelf);
  EXPECT_EQ(hybrid.v1_memory, "/process_api/234b3199a17af0e46c7d9c38430d1d0f");
  EXPECT_EQ(hybrid.v2, "/");
  SelfCgroups v2 = parse_self_cgroups("0::/user.slice/user-1000.slice/session-3.scope\n");
  EXPECT_FALSE(v2.v1_memory);
  EXPECT_EQ(v2.v2, "/user.slice/user-1000.slice/session-3.scope");
  // Memory co-mounted with other controllers, and a path that holds ':'.
  SelfCgroups comounted = parse_self_cgroups("5:cpu,memory,blkio:/kube:pods/a\n");
  EXPECT_EQ(comounted.v1_memory, "/kube:pods/a");
  // No memory line at all, a line without its path, garbage.
  EXPECT_FALSE(parse_self_cgroups("8:pids:/\n3:cpuset:/\n").v1_memory);
  EXPECT_FALSE(parse_self_cgroups("4:memory\n").v1_memory);
  SelfCgroups garbage = parse_self_cgroups("\x01\xff:::\n::\n0:\n4:memory:relative\n");
  EXPECT_FALSE(garbage.v1_memory);
  EXPECT_FALSE(garbage.v2);
  EXPECT_FALSE(parse_self_cgroups("").v2);
}

TEST(CgroupMemory, FindsTheMountsFromMountinfo) {
  CgroupMounts hybrid = parse_cgroup_mounts(kHybridMountinfo);
  ASSERT_TRUE(hybrid.v1_memory);
  EXPECT_EQ(hybrid.v1_memory->mount_point, "/sys/fs/cgroup/memory");
  EXPECT_EQ(hybrid.v1_memory->root, "/");
  ASSERT_TRUE(hybrid.v2);
  EXPECT_EQ(hybrid.v2->mount_point, "/sys/fs/cgroup/unified");
  CgroupMounts pod = parse_cgroup_mounts(kPodMountinfo); // optional fields before the '-'
  EXPECT_FALSE(pod.v1_memory);
  ASSERT_TRUE(pod.v2);
  EXPECT_EQ(pod.v2->mount_point, "/sys/fs/cgroup");
  // A container without a cgroup namespace sees its own cgroup as the mount's root; a
  // mount point with a space comes escaped.
  CgroupMounts docker = parse_cgroup_mounts(
      "900 800 0:31 /docker/abc /sys/fs/cgroup/my\\040memory ro,nosuid - cgroup cgroup "
      "rw,memory\n");
  ASSERT_TRUE(docker.v1_memory);
  EXPECT_EQ(docker.v1_memory->root, "/docker/abc");
  EXPECT_EQ(docker.v1_memory->mount_point, "/sys/fs/cgroup/my memory");
  // cpu's hierarchy is not memory's; a line cut short; garbage.
  EXPECT_FALSE(
      parse_cgroup_mounts("31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n").v1_memory);
  EXPECT_FALSE(parse_cgroup_mounts("34 30 0:31 / /sys/fs/cgroup/memory rw - cgroup\n").v1_memory);
  EXPECT_FALSE(parse_cgroup_mounts("34 30 0:31 / /m rw - \n").v1_memory);
  EXPECT_FALSE(parse_cgroup_mounts("- - - - - - - cgroup2\n40 - cgroup2\n\\\\\\9\n").v2);
}

TEST(CgroupMemory, LimitsAndUsageAsKernelsWriteThem) {
  EXPECT_EQ(parse_cgroup_limit("1073741824\n"), kGiB);
  EXPECT_EQ(parse_cgroup_limit("max\n"), std::nullopt);                 // v2: none
  EXPECT_EQ(parse_cgroup_limit("9223372036854771712\n"), std::nullopt); // v1: none
  EXPECT_EQ(parse_cgroup_limit("18446744073709551615\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_limit("99999999999999999999999\n"), std::nullopt); // overflows
  EXPECT_EQ(parse_cgroup_limit("-1\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_limit("12 MiB\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_limit(""), std::nullopt);
  EXPECT_EQ(parse_cgroup_usage("62214144\n"), 62214144u);
  EXPECT_EQ(parse_cgroup_usage("0x10\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_usage("\n"), std::nullopt);
}

TEST(CgroupMemory, TheProcessesCgroupAndItsAncestorsUpToTheMountRoot) {
  const CgroupMount v1{"/", "/sys/fs/cgroup/memory"};
  EXPECT_EQ(cgroup_directories(v1, "/kubepods/burstable/pod1/c1"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory/kubepods/burstable/pod1/c1",
                                      "/sys/fs/cgroup/memory/kubepods/burstable/pod1",
                                      "/sys/fs/cgroup/memory/kubepods/burstable",
                                      "/sys/fs/cgroup/memory/kubepods", "/sys/fs/cgroup/memory"}));
  // With a cgroup namespace the path is "/": the mount root is the container's cgroup.
  EXPECT_EQ(cgroup_directories({"/", "/sys/fs/cgroup"}, "/"),
            (std::vector<std::string>{"/sys/fs/cgroup"}));
  // Without one, the mount's root is the container's cgroup and the path says the same.
  const CgroupMount docker{"/docker/abc", "/sys/fs/cgroup/memory"};
  EXPECT_EQ(cgroup_directories(docker, "/docker/abc"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory"}));
  EXPECT_EQ(cgroup_directories(docker, "/docker/abc/sub"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory/sub", "/sys/fs/cgroup/memory"}));
  // A path outside the mount's root, or one that climbs: the mount root alone.
  EXPECT_EQ(cgroup_directories(docker, "/docker/abcdef"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory"}));
  EXPECT_EQ(cgroup_directories(v1, "/a/../../etc"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory"}));
}

TEST(CgroupMemory, TheTightestRoomOverTheAncestorsCounts) {
  std::map<std::string, std::string> files = {
      {"/cg/pod/c/memory.max", "max\n"},      {"/cg/pod/c/memory.current", "5000\n"},
      {"/cg/pod/memory.max", "1073741824\n"}, {"/cg/pod/memory.current", "73741824\n"},
      {"/cg/memory.max", "4294967296\n"},     {"/cg/memory.current", "100\n"},
      {"/bad/memory.max", "garbage\n"},       {"/nousage/memory.max", "2048\n"}};
  const CgroupFileReader read = [&](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  EXPECT_EQ(
      tightest_cgroup_room({"/cg/pod/c", "/cg/pod", "/cg"}, "memory.max", "memory.current", read),
      uint64_t{1000000000});
  // No limit anywhere (none set, garbage, a directory that does not exist): none known.
  EXPECT_EQ(
      tightest_cgroup_room({"/cg/pod/c", "/bad", "/gone"}, "memory.max", "memory.current", read),
      std::nullopt);
  // A limit whose usage cannot be read bounds the room by itself.
  EXPECT_EQ(tightest_cgroup_room({"/nousage"}, "memory.max", "memory.current", read), 2048u);
  // Usage over the limit (v1 lets it pass briefly): no room, not a wrapped-around figure.
  files["/cg/pod/memory.current"] = "2147483648\n";
  EXPECT_EQ(tightest_cgroup_room({"/cg/pod"}, "memory.max", "memory.current", read), 0u);
}

} // namespace
} // namespace fabric::nccltest
