// The plugin's state for one process: the communicators NCCL initialized, the event pool
// its threads use, and the flusher that writes the process's file every interval and when
// the last communicator is finalized.
//
// Threads: init and finalize come from whichever threads create and destroy
// communicators, possibly at once, and take `comms_mutex_`. The hot path
// (start_operation, start_kernel_channel, record_kernel_end, stop) runs on NCCL's
// launching and proxy threads (see event_pool.h) and takes no lock: the pool and the
// counters are atomics. The flusher reads the counters without stopping anyone.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "exporters/nccl_profiler/comm_stats.h"
#include "exporters/nccl_profiler/event_pool.h"
#include "exporters/nccl_profiler/plugin_config.h"

namespace fabric::nccl_profiler {

class Profiler {
public:
  // `warn` is true for a problem the user should know about; messages go to NCCL's logger.
  using LogFn = std::function<void(bool warn, std::string_view message)>;

  Profiler(PluginConfig config, ProcessIdentity identity, LogFn log);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // NCCL's init and finalize. add_comm returns nullptr when the process already tracks
  // `max_comms` communicators and none of the finalized ones can be let go; NCCL then
  // calls startEvent with that null context and the plugin counts nothing for it.
  CommStats* add_comm(const CommIdentity& identity);
  void finalize_comm(CommStats* comm);
  // Which ABI NCCL took ("ncclProfiler_v5"), for the file.
  void set_abi(const char* abi) { abi_.store(abi, std::memory_order_relaxed); }

  // The hot path. Handles are the pool's (a slot and the generation of its claim, see
  // event_pool.h); a kernel channel's handle is its operation's with the low bit set.
  void* start_operation(CommStats* comm, Collective collective, std::string_view datatype,
                        uint64_t count, unsigned nchannels);
  void* start_kernel_channel(void* parent, uint64_t gpu_start);
  // Counts an operation that will not be timed (NCCL 2.23 to 2.26 give no GPU time);
  // returns its bytes. `comm` is not null.
  uint64_t count_operation(CommStats* comm, Collective collective, unsigned element_size,
                           uint64_t count);
  void record_kernel_end(void* handle, uint64_t gpu_end);
  void stop(void* handle);

  // Writes the file now. Safe from any thread, and against the flusher thread.
  void flush();
  // The process is exiting: stops the flusher and writes a last time. Does nothing in a
  // forked child, which inherited this state but must not overwrite its parent's file.
  void shutdown();

  ProcessProfile snapshot();
  std::string file_path() const;
  const PluginConfig& config() const { return config_; }
  uint64_t events_dropped() const { return dropped_.load(std::memory_order_relaxed); }

private:
  struct CommRecord {
    explicit CommRecord(const CommIdentity& identity) : stats(identity) {}
    CommStats stats;
    bool live = true;
  };

  void complete(EventSlot* slot);
  bool evict_one_finalized();
  void start_flusher();
  void stop_flusher();
  void run_flusher(std::stop_token stop);
  bool in_owner_process() const;

  const PluginConfig config_;
  const ProcessIdentity identity_;
  const LogFn log_;
  EventPool pool_;
  std::atomic<uint32_t> epoch_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> abandoned_{0};
  std::atomic<const char*> abi_{"unknown"};

  // Held by add_comm, finalize_comm and shutdown for their whole call, flusher start and
  // stop included; the flusher thread never takes it.
  std::mutex lifecycle_mutex_;
  std::mutex comms_mutex_;
  std::vector<std::unique_ptr<CommRecord>> comms_;
  int live_comms_ = 0;
  bool ever_had_comms_ = false;

  std::mutex flush_mutex_;
  uint64_t sequence_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
  bool write_failure_logged_ = false;

  // Each flusher thread has its own stop token, so that a communicator created while the
  // last one is being finalized starts a new thread rather than reviving the old one.
  std::mutex thread_mutex_;
  std::condition_variable_any wake_;
  std::jthread flusher_;
};

} // namespace fabric::nccl_profiler
