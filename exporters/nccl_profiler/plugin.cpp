// libnccl-profiler-fabric.so: the symbols NCCL looks up, over one Profiler per process.
//
// Nothing but these six structs is exported (see plugin.map), no exception leaves
// them, and no call fails the job: NCCL only ever gets ncclSuccess, except from an init
// that could not set up the plugin, which makes NCCL continue without it.
//
// The activation mask asks for Coll and P2p events (what each operation is and moves) and,
// unless FABRIC_NCCL_EVENTS=counted, for KernelCh events, because a Coll or P2p event stops when
// the operation is enqueued, not when it is done (ext-profiler/README.md, "Profiling of collective
// and p2p operations"): only the kernel channels' start and end say how long the GPU worked on it.
// NCCL still starts the Group, GroupApi, CollApi and P2pApi events that parent those
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
#include "exporters/nccl_profiler/profiler_abi_v1_v3.h"

namespace fabric::nccl_profiler {
namespace {

int activation_mask(const PluginConfig& config) {
  int mask = ncclProfileColl | ncclProfileP2p;
  if (config.events == EventSet::kTimed) mask |= ncclProfileKernelCh;
  return mask;
}

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
      new Profiler(config_from_environment(std::getenv(kDirEnv), std::getenv(kFlushEnv),
                                           std::getenv(kEventsEnv)),
                   own_process_identity(), log_to_nccl);
  g_profiler.store(profiler, std::memory_order_release);
  std::atexit(shutdown_at_exit);
  log_to_nccl(false, "writing " + profiler->file_path() + " every " +
                         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                            profiler->config().flush_interval)
                                            .count()) +
                         " s" +
                         (profiler->config().events == EventSet::kCounted
                              ? " (counted: no kernel-channel events, nothing timed)"
                              : ""));
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
    *mask = activation_mask(profiler->config());
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

// A Coll or P2p event's operation (v4 to v6 name the same members). Without kernel-channel
// events nothing will time it: it is counted, and holds no slot.
template <typename Op> void* start_operation(Profiler& profiler, CommStats* comm, const Op& op) {
  Collective collective = collective_from_nccl(text(op.func));
  if (profiler.config().events == EventSet::kCounted) {
    if (comm != nullptr)
      profiler.count_operation(comm, collective, datatype_size(text(op.datatype)), op.count);
    return nullptr;
  }
  return profiler.start_operation(comm, collective, text(op.datatype), op.count, op.nChannels);
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
    case ncclProfileColl: *handle = start_operation(profiler, comm, d->coll); break;
    case ncclProfileP2p: *handle = start_operation(profiler, comm, d->p2p); break;
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

// NCCL 2.23 to 2.26 (ABI v1 to v3): init names no communicator, so the context is bound
// to one at its first operation, from the hash and rank every Coll and P2p event carries.
// The rank count is never given (0 in the file), and nothing is timed: there is no kernel
// event with a GPU timestamp to time it by (profiler_abi_v1_v3.h).
struct LegacyContext {
  std::once_flag bound;
  CommStats* stats = nullptr;
  const char* abi;
};

template <const char* Abi> ncclResult_t init_legacy(void** context, int* mask) noexcept {
  try {
    if (context == nullptr || mask == nullptr) return ncclInvalidArgument;
    Profiler* profiler = profiler_for(nullptr);
    profiler->set_abi(Abi);
    *mask = ncclProfileColl | ncclProfileP2p;
    *context = new LegacyContext{{}, nullptr, Abi};
    return ncclSuccess;
  } catch (...) {
    return ncclInternalError;
  }
}

CommStats* legacy_comm(Profiler& profiler, void* context, uint64_t hash, int rank) {
  auto* legacy = static_cast<LegacyContext*>(context);
  if (legacy == nullptr || rank < 0) return nullptr;
  std::call_once(legacy->bound, [&] { legacy->stats = profiler.add_comm({hash, 0, rank, 0}); });
  return legacy->stats;
}

unsigned element_size(uint8_t type) {
  return datatype_size_of(type);
}
unsigned element_size(const char* type) {
  return datatype_size(text(type));
}
Collective collective_of(uint8_t func) {
  return collective_from_nccl_func(func);
}
Collective collective_of(const char* func) {
  return collective_from_nccl(text(func));
}

template <typename Descr>
ncclResult_t start_event_legacy(void* context, void** handle, Descr* d) noexcept {
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr; // nothing to stop or record: counted here, never timed
  if (d == nullptr) return ncclSuccess;
  return guarded([&](Profiler& profiler) {
    if (d->type == ncclProfileColl) {
      if (CommStats* comm = legacy_comm(profiler, context, d->coll.commHash, d->rank)) {
        profiler.count_operation(comm, collective_of(d->coll.func), element_size(d->coll.datatype),
                                 d->coll.count);
      }
    } else if (d->type == ncclProfileP2p) {
      if (CommStats* comm = legacy_comm(profiler, context, d->p2p.commHash, d->rank)) {
        profiler.count_operation(comm, collective_of(d->p2p.func), element_size(d->p2p.datatype),
                                 d->p2p.count);
      }
    }
  });
}

ncclResult_t record_event_state_legacy(void*, ncclProfilerEventState_t,
                                       ncclProfilerEventStateArgs_v1_t*) noexcept {
  return ncclSuccess;
}

ncclResult_t finalize_legacy(void* context) noexcept {
  auto* legacy = static_cast<LegacyContext*>(context);
  if (legacy == nullptr) return ncclSuccess;
  ncclResult_t result = guarded([&](Profiler& profiler) {
    if (legacy->stats != nullptr) profiler.finalize_comm(legacy->stats);
  });
  delete legacy;
  return result;
}

constexpr char kAbiV1[] = "ncclProfiler_v1";
constexpr char kAbiV2[] = "ncclProfiler_v2";
constexpr char kAbiV3[] = "ncclProfiler_v3";

constexpr const char* kPluginName = "fabric";

} // namespace
} // namespace fabric::nccl_profiler

namespace np = fabric::nccl_profiler;

extern "C" {

// NCCL 2.23.
__attribute__((visibility("default")))
ncclProfiler_v1_t ncclProfiler_v1 = {np::kPluginName,
                                     np::init_legacy<np::kAbiV1>,
                                     np::start_event_legacy<ncclProfilerEventDescr_v1_t>,
                                     np::stop_event,
                                     np::record_event_state_legacy,
                                     np::finalize_legacy};

// NCCL 2.24.
__attribute__((visibility("default")))
ncclProfiler_v2_t ncclProfiler_v2 = {np::kPluginName,
                                     np::init_legacy<np::kAbiV2>,
                                     np::start_event_legacy<ncclProfilerEventDescr_v2_t>,
                                     np::stop_event,
                                     np::record_event_state_legacy,
                                     np::finalize_legacy};

// NCCL 2.25 and 2.26.
__attribute__((visibility("default")))
ncclProfiler_v3_t ncclProfiler_v3 = {np::kPluginName,
                                     np::init_legacy<np::kAbiV3>,
                                     np::start_event_legacy<ncclProfilerEventDescr_v3_t>,
                                     np::stop_event,
                                     np::record_event_state_legacy,
                                     np::finalize_legacy};

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
