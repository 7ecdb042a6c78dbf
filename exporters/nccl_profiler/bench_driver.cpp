// fabric-nccl-profiler-bench: the plugin's cost per NCCL event, measured the way NCCL
// pays it: dlopen the library, take its ncclProfiler_v5 table, and call through it in a
// tight loop, beside a table of functions that do nothing (the cost of the calls alone).
//
//   fabric-nccl-profiler-bench PLUGIN.so [OPERATIONS] [THREADS]
//
// Prints one line per measurement: "<name> <plugin ns> <no-op ns>", the calling thread's
// CPU time per operation. scripts/bench/nccl_profiler.sh runs it several times and prints medians.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <dlfcn.h>
#include <string>
#include <thread>
#include <vector>

#include "exporters/nccl_profiler/profiler_abi.h"

namespace {

using Descr = ncclProfilerEventDescr_v5_t;

// The baseline: NCCL's calls into a plugin that does nothing.
__attribute__((noinline)) ncclResult_t noop_init(void** context, uint64_t, int* mask, const char*,
                                                 int, int, int, ncclDebugLogger_t) {
  static int comm;
  *context = &comm;
  *mask = ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh;
  return ncclSuccess;
}
__attribute__((noinline)) ncclResult_t noop_start(void*, void** handle, Descr* d) {
  *handle = d->type == ncclProfileColl || d->type == ncclProfileKernelCh ? d : nullptr;
  return ncclSuccess;
}
__attribute__((noinline)) ncclResult_t noop_stop(void*) {
  return ncclSuccess;
}
__attribute__((noinline)) ncclResult_t noop_record(void*, ncclProfilerEventState_t,
                                                   ncclProfilerEventStateArgs_t*) {
  return ncclSuccess;
}
__attribute__((noinline)) ncclResult_t noop_finalize(void*) {
  return ncclSuccess;
}
ncclProfiler_v5_t noop_table = {"noop",    noop_init,   noop_start,
                                noop_stop, noop_record, noop_finalize};

// The thread's own CPU time: on a loaded machine, wall time would count the time other
// processes had the CPU.
double thread_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

struct Measure {
  double pair_ns = 0;       // Coll startEvent + stopEvent
  double collective_ns = 0; // everything NCCL 2.28 calls for one collective on 2 channels
};

Measure run(ncclProfiler_v5_t* table_in, uint64_t comm_hash, long ops) {
  // Read through a volatile pointer: the compiler may not see that the no-op table's
  // functions are known and call them directly, as NCCL never could.
  ncclProfiler_v5_t* volatile table = table_in;
  void* context = nullptr;
  int mask = 0;
  table->init(&context, comm_hash, &mask, "bench", 1, 8, 0, nullptr);
  Descr coll{};
  coll.type = ncclProfileColl;
  coll.coll.func = "AllReduce";
  coll.coll.datatype = "ncclFloat32";
  coll.coll.count = 1 << 18;
  coll.coll.algo = "RING";
  coll.coll.proto = "SIMPLE";
  Descr group_api{}, coll_api{}, group{}, channel{};
  group_api.type = ncclProfileGroupApi;
  coll_api.type = ncclProfileCollApi;
  coll_api.collApi = {"AllReduce", 1 << 18, "ncclFloat32", 0, nullptr, false};
  group.type = ncclProfileGroup;
  channel.type = ncclProfileKernelCh;
  ncclProfilerEventStateArgs_t end{};

  auto pair = [&] {
    void* h = nullptr;
    table->startEvent(context, &h, &coll);
    table->stopEvent(h);
  };
  auto collective = [&](uint64_t t) {
    void *api = nullptr, *call = nullptr, *grp = nullptr, *op = nullptr, *ch[2] = {};
    table->startEvent(context, &api, &group_api);
    table->startEvent(context, &call, &coll_api);
    table->startEvent(context, &grp, &group);
    table->startEvent(context, &op, &coll);
    if (op) table->stopEvent(op);
    if (grp) table->stopEvent(grp);
    channel.parentObj = op;
    for (int c = 0; c < 2; ++c) {
      channel.kernelCh.channelId = static_cast<uint8_t>(c);
      channel.kernelCh.pTimer = t;
      table->startEvent(context, &ch[c], &channel);
    }
    for (void* h : ch) {
      end.kernelCh.pTimer = t + 1000;
      table->recordEventState(h, ncclProfilerKernelChStop, &end);
      table->stopEvent(h);
    }
  };

  Measure m;
  coll.coll.nChannels = 0; // the pair alone: no kernel channel to wait for
  for (long i = 0; i < ops / 10; ++i)
    pair(); // warm-up: pool, caches, branch predictors
  double start = thread_ns();
  for (long i = 0; i < ops; ++i)
    pair();
  m.pair_ns = (thread_ns() - start) / static_cast<double>(ops);

  coll.coll.nChannels = 2;
  for (long i = 0; i < ops / 10; ++i)
    collective(static_cast<uint64_t>(i));
  start = thread_ns();
  for (long i = 0; i < ops; ++i)
    collective(static_cast<uint64_t>(i));
  m.collective_ns = (thread_ns() - start) / static_cast<double>(ops);
  table->finalize(context);
  return m;
}

// Each thread drives its own communicator, as NCCL's launching threads do.
Measure run_threads(ncclProfiler_v5_t* table, long ops, int threads) {
  std::vector<Measure> results(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] { results[t] = run(table, 0xbe0c000000000000 + t, ops); });
  }
  for (auto& w : workers)
    w.join();
  Measure mean;
  for (const auto& r : results) {
    mean.pair_ns += r.pair_ns / threads;
    mean.collective_ns += r.collective_ns / threads;
  }
  return mean;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s PLUGIN.so [OPERATIONS] [THREADS]\n", argv[0]);
    return 1;
  }
  long ops = argc > 2 ? std::atol(argv[2]) : 2000000;
  int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  if (ops < 1 || threads < 1) {
    std::fprintf(stderr, "%s: OPERATIONS and THREADS must be positive\n", argv[0]);
    return 1;
  }
  void* library = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "%s: %s\n", argv[0], ::dlerror());
    return 2;
  }
  auto* plugin = static_cast<ncclProfiler_v5_t*>(::dlsym(library, "ncclProfiler_v5"));
  if (plugin == nullptr) {
    std::fprintf(stderr, "%s: %s has no ncclProfiler_v5\n", argv[0], argv[1]);
    return 2;
  }
  Measure ours = run_threads(plugin, ops, threads);
  Measure none = run_threads(&noop_table, ops, threads);
  std::printf("pair %.1f %.1f\n", ours.pair_ns, none.pair_ns);
  std::printf("collective %.1f %.1f\n", ours.collective_ns, none.collective_ns);
  return 0;
}
