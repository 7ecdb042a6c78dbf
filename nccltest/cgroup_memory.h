// The memory a process may still take under its cgroup's limits, for the mpi backend's
// plan: in a Kubernetes pod (an MPIJob worker with resources.limits.memory) MemAvailable is
// the node's, and a plan sized to it would have the pod OOM-killed. The limit of the
// process's own memory cgroup and of each ancestor visible under the mount counts; the
// tightest (limit - usage) is the room.
//
// cgroup v2: "0::/path" in /proc/self/cgroup, memory.max ("max": none) and memory.current
// under the cgroup2 mount. cgroup v1: "N:memory:/path", memory.limit_in_bytes (a huge value:
// none) and memory.usage_in_bytes under the memory controller's mount. Mounts come from
// /proc/self/mountinfo, not an assumed /sys/fs/cgroup (a hybrid host has v1 controllers
// under /sys/fs/cgroup/<controller> and an empty v2 at /sys/fs/cgroup/unified). Usage
// counts page cache the kernel could reclaim, so the room errs on the cautious side.
//
// Every file here is text the kernel or a container runtime wrote: the parsers take text
// and return numbers, and anything they cannot read means "no limit known", never a
// refused run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabric::nccltest {

// Where the process sits in each hierarchy that can hold the memory controller.
struct SelfCgroups {
  std::optional<std::string> v1_memory; // "N:memory:/path" (memory among the controllers)
  std::optional<std::string> v2;        // "0::/path"
};
SelfCgroups parse_self_cgroups(std::string_view proc_self_cgroup);

// A cgroup filesystem mount: the cgroup its root shows (mountinfo's fourth field; "/"
// unless the runtime bind-mounted a sub-tree) and where it is mounted.
struct CgroupMount {
  std::string root;
  std::string mount_point;
};
struct CgroupMounts {
  std::optional<CgroupMount> v1_memory; // type "cgroup" with "memory" in its super options
  std::optional<CgroupMount> v2;        // type "cgroup2"
};
CgroupMounts parse_cgroup_mounts(std::string_view proc_self_mountinfo);

// memory.max or memory.limit_in_bytes: the limit in bytes; nullopt for none ("max", or
// v1's page-rounded LONG_MAX and anything else from 2^60 up) and for text that is not one
// number.
std::optional<uint64_t> parse_cgroup_limit(std::string_view text);

// memory.current or memory.usage_in_bytes; nullopt for text that is not one number.
std::optional<uint64_t> parse_cgroup_usage(std::string_view text);

// The directories whose limits bind the process: its own cgroup's, then each parent's up
// to the mount's root. A path outside the mount's root (no cgroup namespace, another
// tree bind-mounted) leaves the mount root alone; so does a path that names a directory
// that does not exist (the reader skips it).
std::vector<std::string> cgroup_directories(const CgroupMount& mount, const std::string& path);

// The tightest (limit - usage) over `directories`, from each one's limit and usage files
// as `read` returns them (nullopt: unreadable); nullopt when none has a limit.
using CgroupFileReader = std::function<std::optional<std::string>(const std::string& path)>;
std::optional<uint64_t> tightest_cgroup_room(const std::vector<std::string>& directories,
                                             std::string_view limit_file,
                                             std::string_view usage_file,
                                             const CgroupFileReader& read);

// This process's room under every memory limit of both versions, read from /proc/self
// and the cgroup mounts; nullopt when no limit is known.
std::optional<uint64_t> cgroup_memory_room();

} // namespace fabric::nccltest
