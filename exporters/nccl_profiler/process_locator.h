// Finds the process that wrote a profile, as this reader's /proc shows it.
//
// The plugin runs in a training container, usually in its own pid namespace: its file
// gives its pid there, that namespace's inode and its start time. From the host's pid
// namespace (a DaemonSet with hostPID), the process is the one whose /proc/PID/ns/pid is
// that namespace and whose "NSpid:" ends with that pid, and the start time tells it
// from a later process that got the same pid. Reading another container's ns/pid link
// takes ptrace access (CAP_SYS_PTRACE); without it, a process is the one whose "NSpid:"
// ends with that pid and whose start time is the file's, when exactly one is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "common/sysfs.h"

namespace fabric::nccl_profiler {

// The initial pid namespace's inode (PROC_PID_INIT_INO in the kernel): a reader in it sees
// every process of the machine, so a process it cannot find has exited.
inline constexpr uint64_t kInitialPidNamespace = 0xeffffffc;

struct ProcessClaim {
  int64_t pid = 0;
  uint64_t pid_ns = 0; // 0: unknown
  uint64_t start_ticks = 0;
};

enum class Presence {
  kAlive,   // found, with the same start time
  kExited,  // this reader would see it, and it is not there (or the pid is another process)
  kUnknown, // its pid namespace is out of this reader's sight
};

struct Located {
  Presence presence = Presence::kUnknown;
  int64_t pid = 0; // in this reader's /proc, when alive
};

class ProcessLocator {
public:
  // `proc_root` stands for /proc (tests point it at a fixture).
  explicit ProcessLocator(std::string proc_root = "/proc");

  // Forgets what the last scan of /proc found: processes come and go between reads.
  void begin_read();
  Located locate(const ProcessClaim& claim);

  // The uid a process (pid in this reader's /proc) creates its files as; none when it
  // cannot be read (the process exited).
  std::optional<uint32_t> file_owner(int64_t pid) const;

  const SysfsReader& proc() const { return proc_; }

private:
  std::optional<uint64_t> start_ticks(int64_t pid) const;
  std::optional<uint64_t> pid_namespace(const std::string& pid) const;
  void scan();

  SysfsReader proc_;
  std::optional<uint64_t> own_namespace_;
  bool scanned_ = false;
  // (pid namespace, pid inside it) -> pid here, from the last scan.
  std::map<std::pair<uint64_t, int64_t>, int64_t> by_namespace_;
  // pid inside its namespace -> pid here, for processes whose ns/pid link is not readable
  // by this reader (no CAP_SYS_PTRACE): matched by start time instead.
  std::multimap<int64_t, int64_t> unverified_;
  // Claims matched by an earlier read, checked again by start time only; those no read
  // asked about since the previous one are forgotten.
  struct Known {
    int64_t pid = 0;
    bool used = false;
  };
  std::map<std::tuple<uint64_t, int64_t, uint64_t>, Known> known_;
};

} // namespace fabric::nccl_profiler
