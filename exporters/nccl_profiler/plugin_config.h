// The plugin's settings, from the environment of the process NCCL runs in, and the
// identity of that process as the file records it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fabric::nccl_profiler {

inline constexpr const char* kDirEnv = "FABRIC_NCCL_DIR";
inline constexpr const char* kFlushEnv = "FABRIC_NCCL_FLUSH_S";
inline constexpr const char* kEventsEnv = "FABRIC_NCCL_EVENTS";

// What the plugin asks NCCL for. kTimed adds the kernel-channel events, whose GPU
// timestamps give busy time and bandwidth, at a cost inside NCCL: a profiler proxy
// operation per channel, and under CUDA graph capture a host function per plan that the
// kernel waits on. kCounted asks for the Coll and P2p events only: operations and bytes,
// no time, nothing added to how NCCL launches work.
enum class EventSet { kTimed, kCounted };
inline constexpr const char* kDefaultDir = "/run/fabric/nccl";
inline constexpr int kDefaultFlushSeconds = 10;
inline constexpr int kMaxFlushSeconds = 3600;

struct PluginConfig {
  std::string dir = kDefaultDir;
  // Whole seconds from the environment; finer only in tests, which race the flusher.
  std::chrono::milliseconds flush_interval = std::chrono::seconds(kDefaultFlushSeconds);
  EventSet events = EventSet::kTimed;
  // Operations in flight at once, over every communicator of the process: NCCL keeps at
  // most a few thousand per communicator in flight (its per-channel profiler ring holds 64).
  std::size_t pool_slots = 16384;
  // Communicators whose counters the file carries; finalized ones are let go first.
  std::size_t max_comms = 256;
  // An operation still waiting for its kernel channels after this many flushes is
  // abandoned (counted, never timed), so that a channel NCCL never reports cannot pin a
  // slot forever.
  uint32_t abandon_after_flushes = 6;
  // Set when a variable was present but unusable: logged once through NCCL's logger.
  std::vector<std::string> warnings;
};

// From the variables' values (nullptr when unset).
PluginConfig config_from_environment(const char* dir, const char* flush_seconds,
                                     const char* events = nullptr);

struct ProcessIdentity {
  int64_t pid = 0;
  uint64_t pid_ns = 0;      // 0 when /proc/self/ns/pid cannot be read
  uint64_t start_ticks = 0; // 0 when /proc/self/stat cannot be read
};

ProcessIdentity own_process_identity();

} // namespace fabric::nccl_profiler
