// libnccl-profiler-fabric.so: the symbols NCCL looks up, over one Profiler per process.
//
// Nothing but these three structs is exported (see plugin.map), no exception leaves
// them, and no call fails the job: NCCL only ever gets ncclSuccess, except from an init
// that could not set up the plugin, which makes NCCL continue without it.
//
// The activation mask asks for Coll and P2p events (what each operation is and moves) and
// for KernelCh events, because a Coll or P2p event stops when the operation is enqueued,
// not when it is done (ext-profiler/README.md, "Profiling of collective and p2p
// operations"): only the kernel channels' start and end say how long the GPU worked on
// it. NCCL still starts the Group, GroupApi, CollApi and P2pApi events that parent those
// (src/plugin/profiler.cc tests its masks that way); they get a null handle at once. No
// proxy or network events: they would cost NCCL's proxy thread work per network step.
// Copy-engine collectives of NCCL 2.29+ (CeColl events) are not asked for: their events
// mark the enqueue only, and the plugin has no CUDA to time them.

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

#include "exporters/nccl_profiler/profiler.h"
#include "exporters/nccl_profiler/profiler_abi.h"

namespace fabric::nccl_profiler {
namespace {

constexpr int kActivationMask = ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh;

std::atomic<ncclDebugLogger_t> g_logger{nullptr};
std::atomic<Profiler*> g_profiler{nullptr};
std::mutex g_create_mutex;

void log_to_nccl(bool warn, std::string_view message) {
  ncclDebugLogger_t logger = g_logger.load(std::memory_order_acquire);
  if (logger == nullptr) return;
  logger(warn ? NCCL_LOG_WARN : NCCL_LOG_INFO, NCCL_INIT, __FILE__, __LINE__,
         "fabric profiler: %.*s", static_cast<int>(message.size()), message.data());
}

void shutdown_at_exit() {
  try {
    if (Profiler* profiler = g_profiler.load(std::memory_order_acquire)) profiler->shutdown();
  } catch (...) {
  }
}

// The process's profiler, created at the first init with the environment of that moment.
// It is never destroyed: the library is linked with -z nodelete, so NCCL's dlclose after
// its last communicator leaves it (and its cumulative counters) for the next init, and
// the counters of a live process never go back to zero.
Profiler* profiler_for(ncclDebugLogger_t logger) {
  ncclDebugLogger_t none = nullptr;
  if (logger != nullptr) g_logger.compare_exchange_strong(none, logger);
  if (Profiler* profiler = g_profiler.load(std::memory_order_acquire)) return profiler;
  std::lock_guard lock(g_create_mutex);
  if (Profiler* profiler = g_profiler.load(std::memory_order_acquire)) return profiler;
  auto* profiler =
      new Profiler(config_from_environment(std::getenv(kDirEnv), std::getenv(kFlushEnv)),
                   own_process_identity(), log_to_nccl);
  g_profiler.store(profiler, std::memory_order_release);
  std::atexit(shutdown_at_exit);
  log_to_nccl(false, "writing " + profiler->file_path() + " every " +
                         std::to_string(profiler->config().flush_interval.count()) + " s");
  return profiler;
}

ncclResult_t init(void** context, int* mask, uint64_t comm_hash, int nnodes, int nranks, int rank,
                  ncclDebugLogger_t logger, const char* abi) noexcept {
  try {
    if (context == nullptr || mask == nullptr) return ncclInvalidArgument;
    *context = nullptr;
    Profiler* profiler = profiler_for(logger);
    profiler->set_abi(abi);
    // NCCL keeps one activation mask for the process and every init overwrites it, so each
    // sets the same one, also for a communicator this plugin does not count.
    *mask = kActivationMask;
    if (nranks < 1 || rank < 0 || rank >= nranks) {
      log_to_nccl(true, "communicator with rank " + std::to_string(rank) + " of " +
                            std::to_string(nranks) + " ranks is not counted");
      return ncclSuccess;
    }
    *context = profiler->add_comm({comm_hash, nranks, rank, nnodes});
    return ncclSuccess;
  } catch (...) {
    return ncclInternalError;
  }
}

ncclResult_t init_v4(void** context, int* mask, const char* /*comm_name*/, uint64_t comm_hash,
                     int nnodes, int nranks, int rank, ncclDebugLogger_t logger) {
  return init(context, mask, comm_hash, nnodes, nranks, rank, logger, "ncclProfiler_v4");
}

ncclResult_t init_v5(void** context, uint64_t comm_id, int* mask, const char* /*comm_name*/,
                     int nnodes, int nranks, int rank, ncclDebugLogger_t logger) {
  return init(context, mask, comm_id, nnodes, nranks, rank, logger, "ncclProfiler_v5");
}

ncclResult_t init_v6(void** context, uint64_t comm_id, int* mask, const char* /*comm_name*/,
                     int nnodes, int nranks, int rank, ncclDebugLogger_t logger) {
  return init(context, mask, comm_id, nnodes, nranks, rank, logger, "ncclProfiler_v6");
}

std::string_view text(const char* s) {
  return s == nullptr ? std::string_view() : std::string_view(s);
}

// Runs `body` for NCCL: whatever happens in it, NCCL gets ncclSuccess and no exception.
template <typename Body> ncclResult_t guarded(Body&& body) noexcept {
  try {
    if (Profiler* profiler = g_profiler.load(std::memory_order_acquire)) body(*profiler);
  } catch (...) {
  }
  return ncclSuccess;
}

// One body for the three descriptor versions: the members read here have the same layout
// in each (abi_layout_test.cpp); only the width of `type` differs.
template <typename Descr>
ncclResult_t start_event(void* context, void** handle, Descr* d) noexcept {
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr;
  if (d == nullptr) return ncclSuccess;
  return guarded([&](Profiler& profiler) {
    auto* comm = static_cast<CommStats*>(context);
    switch (d->type) {
    case ncclProfileColl:
      *handle = profiler.start_operation(comm, collective_from_nccl(text(d->coll.func)),
                                         text(d->coll.datatype), d->coll.count, d->coll.nChannels);
      break;
    case ncclProfileP2p:
      *handle = profiler.start_operation(comm, collective_from_nccl(text(d->p2p.func)),
                                         text(d->p2p.datatype), d->p2p.count, d->p2p.nChannels);
      break;
    case ncclProfileKernelCh:
      *handle = profiler.start_kernel_channel(d->parentObj, d->kernelCh.pTimer);
      break;
    default: break;
    }
  });
}

ncclResult_t stop_event(void* handle) noexcept {
  return guarded([&](Profiler& profiler) {
    if (handle != nullptr) profiler.stop(handle);
  });
}

ncclResult_t record_event_state(void* handle, ncclProfilerEventState_t state,
                                ncclProfilerEventStateArgs_t* args) noexcept {
  return guarded([&](Profiler& profiler) {
    if (handle != nullptr && args != nullptr && state == ncclProfilerKernelChStop) {
      profiler.record_kernel_end(handle, args->kernelCh.pTimer);
    }
  });
}

ncclResult_t finalize(void* context) noexcept {
  return guarded(
      [&](Profiler& profiler) { profiler.finalize_comm(static_cast<CommStats*>(context)); });
}

constexpr const char* kPluginName = "fabric";

} // namespace
} // namespace fabric::nccl_profiler

namespace np = fabric::nccl_profiler;

extern "C" {

// NCCL 2.27 (and, adapted from v5, 2.28 to 2.30 when no newer symbol is found).
__attribute__((visibility("default")))
ncclProfiler_v4_t ncclProfiler_v4 = {np::kPluginName,
                                     np::init_v4,
                                     np::start_event<ncclProfilerEventDescr_v4_t>,
                                     np::stop_event,
                                     np::record_event_state,
                                     np::finalize};

// NCCL 2.28.
__attribute__((visibility("default")))
ncclProfiler_v5_t ncclProfiler_v5 = {np::kPluginName,
                                     np::init_v5,
                                     np::start_event<ncclProfilerEventDescr_v5_t>,
                                     np::stop_event,
                                     np::record_event_state,
                                     np::finalize};

// NCCL 2.29 and 2.30.
__attribute__((visibility("default")))
ncclProfiler_v6_t ncclProfiler_v6 = {np::kPluginName,
                                     np::init_v6,
                                     np::start_event<ncclProfilerEventDescr_v6_t>,
                                     np::stop_event,
                                     np::record_event_state,
                                     np::finalize};

} // extern "C"
