// libnccl-profiler-fabric.so as NCCL uses it: dlopen, dlsym of the version's struct, and
// the calls in the order NCCL 2.28 makes them (src/plugin/profiler.cc, src/enqueue.cc
// hostStreamPlanTask, src/transport/profiler.cc), from a launching thread and a proxy
// thread per communicator. Then the file it wrote, read back.
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/subprocess.h"
#include "exporters/nccl_profiler/plugin_config.h"
#include "exporters/nccl_profiler/profile_format.h"
#include "exporters/nccl_profiler/profiler_abi.h"
#include "exporters/nccl_profiler/profiler_abi_v1_v3.h"
#include "test_support.h"

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer mistakes the dynamic TLS block glibc gives a dlopen'ed library for an older
// glibc's layout (google/sanitizers#1322) and faults in its own exit-time scan after every
// test here has passed. Leaks are still checked; only dynamic TLS is not scanned, and the
// plugin keeps no heap pointer there alone.
extern "C" const char* __asan_default_options() {
  return "intercept_tls_get_addr=0";
}
#endif

namespace fabric::nccl_profiler {
namespace {

std::mutex g_log_mutex;
std::vector<std::string> g_log;

void capture_log(ncclDebugLogLevel level, unsigned long /*flags*/, const char* /*file*/,
                 int /*line*/, const char* fmt, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  std::lock_guard lock(g_log_mutex);
  g_log.push_back((level == NCCL_LOG_WARN ? "WARN " : "INFO ") + std::string(buffer));
}

// The plugin reads its environment at the first init of the process, and keeps its state
// for the process's life: every test here shares one directory.
const std::string& plugin_dir() {
  static testing::TempDir dir;
  static bool set = [] {
    ::setenv(kDirEnv, dir.path().c_str(), 1);
    ::setenv(kFlushEnv, "3600", 1); // only finalize writes, so the tests read a known state
    return true;
  }();
  (void)set;
  return dir.path();
}

constexpr int kMask = ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh;

// One communicator as NCCL drives it, for a given version of the table.
template <typename Table, typename Descr> class NcclComm {
public:
  NcclComm(Table* table, void* context) : table_(table), context_(context) {}

  void* start(Descr d) {
    void* handle = reinterpret_cast<void*>(0xdead); // the plugin must always set it
    table_->startEvent(context_, &handle, &d);
    return handle;
  }

  // The launching thread's part of one operation: ncclEnqueueCheck's API events, then
  // hostStreamPlanTask's Group and Coll (or P2p) events around the proxy start. Returns the
  // operation's handle, which NCCL hands to the proxy thread.
  void* launch(bool p2p, const char* func, const char* datatype, size_t count, uint8_t nchannels) {
    std::vector<void*> api;
    if constexpr (!std::is_same_v<Descr, ncclProfilerEventDescr_v4_t>) {
      Descr group_api{};
      group_api.type = ncclProfileGroupApi;
      group_api.groupApi.groupDepth = 1;
      api.push_back(start(group_api));
      Descr call{};
      call.type = p2p ? ncclProfileP2pApi : ncclProfileCollApi;
      call.parentObj = api.back();
      if (p2p) {
        call.p2pApi = {func, count, datatype, nullptr, false};
      } else {
        call.collApi = {func, count, datatype, 0, nullptr, false};
      }
      api.push_back(start(call));
    }
    Descr group{};
    group.type = ncclProfileGroup;
    void* group_handle = start(group);
    Descr op{};
    op.type = p2p ? ncclProfileP2p : ncclProfileColl;
    op.rank = 1;
    if (p2p) {
      op.p2p.func = func;
      op.p2p.datatype = datatype;
      op.p2p.count = count;
      op.p2p.peer = 0;
      op.p2p.nChannels = nchannels;
    } else {
      op.coll.seqNumber = seq_++;
      op.coll.func = func;
      op.coll.count = count;
      op.coll.datatype = datatype;
      op.coll.nChannels = nchannels;
      op.coll.nWarps = 16;
      op.coll.algo = "RING";
      op.coll.proto = "SIMPLE";
    }
    void* handle = start(op);
    EXPECT_NE(handle, nullptr) << func;
    // ncclProfilerStopTaskEvents, ncclProfilerStopGroupEvent: only non-null handles.
    if (handle) table_->stopEvent(handle);
    if (group_handle) table_->stopEvent(group_handle);
    for (void* h : api)
      EXPECT_EQ(h, nullptr) << "API events are not asked for";
    return handle;
  }

  // The proxy thread's part: profilerProxyProgress starts every channel's KernelCh event,
  // then ends each with ncclProfilerKernelChStop and the GPU's end time.
  void run_channels(void* op, uint8_t nchannels, uint64_t gpu_start, uint64_t gpu_ns) {
    std::vector<void*> channels;
    for (uint8_t c = 0; c < nchannels; ++c) {
      Descr d{};
      d.type = ncclProfileKernelCh;
      d.parentObj = op;
      d.kernelCh.channelId = c;
      d.kernelCh.pTimer = gpu_start + c;
      channels.push_back(start(d));
      EXPECT_NE(channels.back(), nullptr);
    }
    for (uint8_t c = 0; c < nchannels; ++c) {
      ncclProfilerEventStateArgs_t args{};
      args.kernelCh.pTimer = gpu_start + gpu_ns - c;
      table_->recordEventState(channels[c], ncclProfilerKernelChStop, &args);
      table_->stopEvent(channels[c]);
    }
  }

  void finalize() { EXPECT_EQ(table_->finalize(context_), ncclSuccess); }

private:
  Table* table_;
  void* context_;
  uint64_t seq_ = 0;
};

class PluginTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = plugin_dir();
    handle_ = ::dlopen(FABRIC_NCCL_PROFILER_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
    v4_ = static_cast<ncclProfiler_v4_t*>(::dlsym(handle_, "ncclProfiler_v4"));
    v5_ = static_cast<ncclProfiler_v5_t*>(::dlsym(handle_, "ncclProfiler_v5"));
    v6_ = static_cast<ncclProfiler_v6_t*>(::dlsym(handle_, "ncclProfiler_v6"));
    ASSERT_TRUE(v4_ && v5_ && v6_);
  }
  void TearDown() override {
    // As NCCL does after its last communicator; the library stays (-z nodelete).
    if (handle_) ::dlclose(handle_);
  }

  NcclComm<ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t> init_v5(uint64_t hash, int nranks,
                                                                   int rank) {
    void* context = nullptr;
    int mask = 0;
    EXPECT_EQ(v5_->init(&context, hash, &mask, "trainer", 1, nranks, rank, capture_log),
              ncclSuccess);
    EXPECT_EQ(mask, kMask);
    EXPECT_NE(context, nullptr);
    return {v5_, context};
  }

  ProcessProfile read_profile() {
    ProcessIdentity me = own_process_identity();
    std::string path = dir_ + "/" + profile_file_name(me.pid, me.pid_ns, me.start_ticks);
    auto parsed = parse_profile(testing::read_text(path), path);
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message());
    return parsed.ok() ? *parsed : ProcessProfile{};
  }

  static const CommProfile* comm(const ProcessProfile& p, uint64_t hash) {
    for (const auto& c : p.comms) {
      if (c.hash == hash) return &c;
    }
    return nullptr;
  }
  static const ProfileCell* cell(const CommProfile& c, std::string_view collective, uint64_t size) {
    for (const auto& cell : c.cells) {
      if (collective_name(cell.collective) == collective && cell.size_bytes == size) return &cell;
    }
    return nullptr;
  }

  std::string dir_;
  void* handle_ = nullptr;
  ncclProfiler_v4_t* v4_ = nullptr;
  ncclProfiler_v5_t* v5_ = nullptr;
  ncclProfiler_v6_t* v6_ = nullptr;
};

TEST_F(PluginTest, EveryCollectiveTypeAndCountAsNccl228CallsIt) {
  constexpr uint64_t kHash = 0xa11c011ec7140001;
  auto nccl = init_v5(kHash, 4, 1);
  struct Case {
    bool p2p;
    const char* func;
    const char* datatype;
    size_t count;
    std::string_view label;
    uint64_t bucket;
  };
  // Sizes as nccl-tests counts them: per-rank counts times 4 ranks for the gathers.
  const Case cases[] = {
      {false, "AllReduce", "ncclFloat32", 262144, "all_reduce", 1 << 20}, // 1 MiB
      {false, "AllReduce", "ncclFloat32", 262144, "all_reduce", 1 << 20},
      {false, "AllReduce", "ncclBfloat16", 3, "all_reduce", 4},               // 6 B
      {false, "AllGather", "ncclInt8", 1000, "all_gather", 2048},             // 4000 B
      {false, "ReduceScatter", "ncclFloat64", 1024, "reduce_scatter", 32768}, // 32 KiB
      {false, "Broadcast", "ncclInt64", 10, "broadcast", 64},                 // 80 B
      {false, "Reduce", "ncclFloat16", 7, "reduce", 8},                       // 14 B
      {false, "AlltoAll", "ncclUint32", 100, "alltoall", 1024},               // 1600 B
      {true, "Send", "ncclFloat32", 256, "send", 1024},                       // 1 KiB
      {true, "Recv", "Unknown", 300, "recv", 256},                            // ncclUint8
  };
  uint64_t at = 1000000;
  for (const auto& c : cases) {
    void* op = nccl.launch(c.p2p, c.func, c.datatype, c.count, 2);
    nccl.run_channels(op, 2, at, 100000); // 100 us on the GPU, one after the other
    at += 200000;
  }
  nccl.finalize();

  ProcessProfile profile = read_profile();
  EXPECT_EQ(profile.abi, "ncclProfiler_v5");
  EXPECT_EQ(profile.events_dropped, 0u);
  const CommProfile* world = comm(profile, kHash);
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->nranks, 4);
  EXPECT_EQ(world->rank, 1);
  EXPECT_EQ(world->cells.size(), 9u);
  const ProfileCell* ar = cell(*world, "all_reduce", 1 << 20);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->ops, 2u);
  EXPECT_EQ(ar->bytes, 2u << 20);
  EXPECT_EQ(ar->timed_ops, 2u);
  EXPECT_EQ(ar->busy_ns, 200000u) << "100 us each";
  struct Bytes {
    std::string_view label;
    uint64_t bucket, bytes;
  };
  for (auto [label, bucket, bytes] :
       {Bytes{"all_reduce", 4, 6}, Bytes{"all_gather", 2048, 4000},
        Bytes{"reduce_scatter", 32768, 32768}, Bytes{"broadcast", 64, 80}, Bytes{"reduce", 8, 14},
        Bytes{"alltoall", 1024, 1600}, Bytes{"send", 1024, 1024}, Bytes{"recv", 256, 300}}) {
    const ProfileCell* c = cell(*world, label, bucket);
    ASSERT_NE(c, nullptr) << label << " " << bucket;
    EXPECT_EQ(c->ops, 1u) << label;
    EXPECT_EQ(c->bytes, bytes) << label;
    EXPECT_EQ(c->timed_ops, 1u) << label;
    EXPECT_EQ(c->busy_ns, 100000u) << label;
  }
  // One after the other, the communicator was busy 10 x 100 us, with all their bytes.
  ASSERT_TRUE(world->busy.has_value());
  EXPECT_EQ(world->busy->busy_ns, 1000000u);
  uint64_t timed_bytes = 0;
  for (const auto& c : world->cells)
    timed_bytes += c.timed_bytes;
  EXPECT_EQ(world->busy->timed_bytes, timed_bytes);
  // The file says the bandwidths as nccl-tests would: 2 MiB in 200 us is 10.49 GB/s, and
  // an all_reduce over 4 ranks moves 2*3/4 of that over the bus.
  std::string text = render_profile(profile);
  EXPECT_NE(text.find("algbw_gbps 10.49 busbw_gbps 15.73\n"), std::string::npos) << text;
}

// A group of an all-reduce and a send, launched together as NCCL 2.28 enqueues a group
// (both Coll/P2p starts first), their channels stamped with the batch's 1-5 us, then an
// all-gather that overlaps the batch's last microsecond (4-7 us). Each cell has its own
// time (4 + 4 + 3 us); the communicator's line counts the 6 us it was busy.
TEST_F(PluginTest, ACommunicatorsLineCountsItsGroupsOnce) {
  constexpr uint64_t kHash = 0x67f0a9000000000a;
  auto nccl = init_v5(kHash, 4, 0);
  void* all_reduce = nccl.launch(false, "AllReduce", "ncclFloat32", 1024, 1);
  void* send = nccl.launch(true, "Send", "ncclFloat32", 1024, 1);
  nccl.run_channels(all_reduce, 1, 1000, 4000);
  nccl.run_channels(send, 1, 1000, 4000);
  void* all_gather = nccl.launch(false, "AllGather", "ncclFloat32", 256, 1);
  nccl.run_channels(all_gather, 1, 4000, 3000);
  nccl.finalize();

  ProcessProfile profile = read_profile();
  const CommProfile* c = comm(profile, kHash);
  ASSERT_NE(c, nullptr);
  uint64_t cells_busy = 0;
  for (const auto& cell : c->cells)
    cells_busy += cell.busy_ns;
  EXPECT_EQ(cells_busy, 11000u);
  ASSERT_TRUE(c->busy.has_value());
  EXPECT_EQ(c->busy->busy_ns, 6000u);
  EXPECT_EQ(c->busy->timed_bytes, 3u * 4096);
}

TEST_F(PluginTest, ThreadsOfSeveralCommunicatorsAtOnce) {
  constexpr int kComms = 4, kOps = 3000;
  ProcessIdentity me = own_process_identity();
  uint64_t dropped_before = 0;
  if (auto before = parse_profile(
          testing::read_text(dir_ + "/" + profile_file_name(me.pid, me.pid_ns, me.start_ticks)),
          "before");
      before.ok()) {
    dropped_before = before->events_dropped;
  }
  std::vector<NcclComm<ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t>> comms;
  for (int i = 0; i < kComms; ++i)
    comms.push_back(init_v5(0xc0ffee0000000000 + i, 8, i));
  struct Queue {
    std::mutex mutex;
    std::deque<void*> ops;
    bool done = false;
  };
  std::vector<Queue> queues(kComms);
  std::vector<std::thread> threads;
  for (int i = 0; i < kComms; ++i) {
    threads.emplace_back([&, i] { // the launching thread
      for (int n = 0; n < kOps; ++n) {
        void* op =
            comms[i].launch(n % 3 == 0, n % 3 == 0 ? "Send" : "AllReduce", "ncclFloat32", 1024, 2);
        std::lock_guard lock(queues[i].mutex);
        queues[i].ops.push_back(op);
      }
      std::lock_guard lock(queues[i].mutex);
      queues[i].done = true;
    });
    threads.emplace_back([&, i] { // the proxy thread
      uint64_t at = 5000;         // the GPU runs the operations one after the other
      for (;;) {
        void* op = nullptr;
        {
          std::lock_guard lock(queues[i].mutex);
          if (!queues[i].ops.empty()) {
            op = queues[i].ops.front();
            queues[i].ops.pop_front();
          } else if (queues[i].done) {
            return;
          }
        }
        if (op) {
          comms[i].run_channels(op, 2, at, 700);
          at += 1000;
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& t : threads)
    t.join();
  for (auto& c : comms)
    c.finalize();

  ProcessProfile profile = read_profile();
  uint64_t timed = 0;
  for (int i = 0; i < kComms; ++i) {
    const CommProfile* c = comm(profile, 0xc0ffee0000000000 + i);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->rank, i);
    const ProfileCell* ar = cell(*c, "all_reduce", 4096);
    const ProfileCell* send = cell(*c, "send", 4096);
    ASSERT_TRUE(ar && send);
    EXPECT_EQ(ar->ops + send->ops, uint64_t{kOps});
    EXPECT_EQ(send->ops, uint64_t{kOps / 3});
    EXPECT_EQ(ar->busy_ns, ar->timed_ops * 700);
    timed += ar->timed_ops + send->timed_ops;
  }
  // Each operation timed exactly once, unless the pool had no slot for it.
  EXPECT_EQ(timed + (profile.events_dropped - dropped_before), uint64_t{kComms} * kOps);
}

TEST_F(PluginTest, Version4AndVersion6TablesCountTheSame) {
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v4_->init(&context, &mask, "v4", 0x4444000000000004, 1, 2, 0, capture_log),
            ncclSuccess);
  EXPECT_EQ(mask, kMask);
  NcclComm<ncclProfiler_v4_t, ncclProfilerEventDescr_v4_t> v4(v4_, context);
  void* op = v4.launch(false, "AllGather", "ncclFloat32", 64, 1);
  v4.run_channels(op, 1, 10, 50);
  v4.finalize();
  ProcessProfile after_v4 = read_profile();
  EXPECT_EQ(after_v4.abi, "ncclProfiler_v4");
  const CommProfile* c4 = comm(after_v4, 0x4444000000000004);
  ASSERT_NE(c4, nullptr);
  const ProfileCell* ag = cell(*c4, "all_gather", 512);
  ASSERT_NE(ag, nullptr) << "64 x 4 bytes x 2 ranks";
  EXPECT_EQ(ag->timed_ops, 1u);
  EXPECT_EQ(ag->busy_ns, 50u);

  ASSERT_EQ(v6_->init(&context, 0x6666000000000006, &mask, "v6", 1, 2, 1, capture_log),
            ncclSuccess);
  EXPECT_EQ(mask, kMask) << "copy-engine events are not asked for";
  NcclComm<ncclProfiler_v6_t, ncclProfilerEventDescr_v6_t> v6(v6_, context);
  op = v6.launch(true, "Recv", "ncclFloat64", 2, 1);
  v6.run_channels(op, 1, 10, 70);
  // A copy-engine collective's events, should NCCL send them anyway, are not counted.
  ncclProfilerEventDescr_v6_t ce{};
  ce.type = ncclProfileCeColl;
  ce.ceColl.func = "AllGather";
  ce.ceColl.datatype = "ncclFloat32";
  ce.ceColl.count = 1;
  EXPECT_EQ(v6.start(ce), nullptr);
  v6.finalize();
  ProcessProfile after_v6 = read_profile();
  EXPECT_EQ(after_v6.abi, "ncclProfiler_v6");
  const CommProfile* c6 = comm(after_v6, 0x6666000000000006);
  ASSERT_NE(c6, nullptr);
  ASSERT_EQ(c6->cells.size(), 1u);
  EXPECT_EQ(collective_name(c6->cells[0].collective), "recv");
  EXPECT_EQ(c6->cells[0].bytes, 16u);
  EXPECT_EQ(c6->cells[0].busy_ns, 70u);
}

// NCCL 2.23 to 2.26 (ABI v1 to v3), as their src/plugin/profiler.cc drives a plugin:
// init with no communicator, then per operation a Group event and a Coll or P2p event that
// carries the communicator's hash and this rank. Operations and bytes are counted under
// that communicator, with its rank count unknown (0); nothing is timed.
template <typename Table, typename Descr, typename Func, typename Type>
void drive_legacy(Table* table, uint64_t hash, int rank, Func coll_func, Type coll_type,
                  Func p2p_func, Type p2p_type) {
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(table->init(&context, &mask), ncclSuccess);
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileP2p) << "no kernel events: they carry no time";
  ASSERT_NE(context, nullptr);
  for (int i = 0; i < 3; ++i) {
    Descr group{};
    group.type = ncclProfileGroup;
    void* handle = reinterpret_cast<void*>(1);
    EXPECT_EQ(table->startEvent(context, &handle, &group), ncclSuccess);
    EXPECT_EQ(handle, nullptr);
    Descr coll{};
    coll.type = ncclProfileColl;
    coll.rank = rank;
    coll.coll.commHash = hash;
    coll.coll.func = coll_func;
    coll.coll.datatype = coll_type;
    coll.coll.count = 256;
    EXPECT_EQ(table->startEvent(context, &handle, &coll), ncclSuccess);
    EXPECT_EQ(handle, nullptr);
    Descr p2p{};
    p2p.type = ncclProfileP2p;
    p2p.rank = rank;
    p2p.p2p.commHash = hash;
    p2p.p2p.func = p2p_func;
    p2p.p2p.datatype = p2p_type;
    p2p.p2p.count = 100;
    p2p.p2p.peer = 0;
    EXPECT_EQ(table->startEvent(context, &handle, &p2p), ncclSuccess);
    EXPECT_EQ(table->stopEvent(handle), ncclSuccess);
  }
  EXPECT_EQ(table->finalize(context), ncclSuccess);
}

TEST_F(PluginTest, Versions1To3CountWhatNcclTheyDescribe) {
  auto* v1 = static_cast<ncclProfiler_v1_t*>(::dlsym(handle_, "ncclProfiler_v1"));
  auto* v2 = static_cast<ncclProfiler_v2_t*>(::dlsym(handle_, "ncclProfiler_v2"));
  auto* v3 = static_cast<ncclProfiler_v3_t*>(::dlsym(handle_, "ncclProfiler_v3"));
  ASSERT_TRUE(v1 && v2 && v3);
  // v1 names the collective and the type by NCCL's enums: AllReduce is 4, ncclFloat32 7,
  // Send 6, ncclInt8 0.
  drive_legacy<ncclProfiler_v1_t, ncclProfilerEventDescr_v1_t>(
      v1, 0x1111000000000001, 2, uint8_t{4}, uint8_t{7}, uint8_t{6}, uint8_t{0});
  EXPECT_EQ(read_profile().abi, "ncclProfiler_v1");
  drive_legacy<ncclProfiler_v2_t, ncclProfilerEventDescr_v2_t>(
      v2, 0x2222000000000002, 1, "AllGather", "ncclFloat16", "Recv", "ncclInt8");
  EXPECT_EQ(read_profile().abi, "ncclProfiler_v2");
  drive_legacy<ncclProfiler_v3_t, ncclProfilerEventDescr_v3_t>(
      v3, 0x3333000000000003, 0, "ReduceScatter", "ncclBfloat16", "Send", "ncclInt8");
  ProcessProfile p = read_profile();
  EXPECT_EQ(p.abi, "ncclProfiler_v3");

  struct Expected {
    uint64_t hash;
    int rank;
    std::string_view coll;
    uint64_t coll_size;
    std::string_view p2p;
  };
  // Per-rank sizes for all_gather and reduce_scatter: the rank count that would scale
  // them is not known on these versions.
  for (const Expected& e : {Expected{0x1111000000000001, 2, "all_reduce", 1024, "send"},
                            Expected{0x2222000000000002, 1, "all_gather", 512, "recv"},
                            Expected{0x3333000000000003, 0, "reduce_scatter", 512, "send"}}) {
    const CommProfile* c = comm(p, e.hash);
    ASSERT_NE(c, nullptr) << e.coll;
    EXPECT_EQ(c->nranks, 0) << "not known";
    EXPECT_EQ(c->rank, e.rank);
    const ProfileCell* coll = cell(*c, e.coll, e.coll_size);
    ASSERT_NE(coll, nullptr) << e.coll;
    EXPECT_EQ(coll->ops, 3u);
    EXPECT_EQ(coll->bytes, 3 * e.coll_size);
    EXPECT_EQ(coll->timed_ops, 0u);
    const ProfileCell* p2p = cell(*c, e.p2p, 64);
    ASSERT_NE(p2p, nullptr) << e.p2p;
    EXPECT_EQ(p2p->ops, 3u);
    EXPECT_EQ(p2p->bytes, 300u);
  }
}

// FABRIC_NCCL_EVENTS=counted: NCCL is not asked for kernel-channel events, so it adds
// nothing to how it launches work; operations and bytes are still counted. The plugin
// reads its environment once per process, so this runs in a child process of its own.
TEST_F(PluginTest, TheCountedEventSetAsksForNoKernelChannels) {
  const char* events = std::getenv(kEventsEnv);
  if (events == nullptr) {
    std::map<std::string, std::string> env = {{kEventsEnv, "counted"}};
    for (const char* keep : {"PATH", "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
      if (const char* value = std::getenv(keep)) env[keep] = value;
    }
    auto child = run_subprocess(
        {"/proc/self/exe", "--gtest_filter=PluginTest.TheCountedEventSetAsksForNoKernelChannels"},
        {.stdin_text = "", .environment = env, .timeout = std::chrono::seconds(60)});
    ASSERT_TRUE(child.ok()) << child.error().message();
    EXPECT_EQ(child->exit_status, 0) << child->stdout_text << child->stderr_text;
    EXPECT_NE(child->stdout_text.find("[  PASSED  ] 1 test"), std::string::npos)
        << child->stdout_text;
    return;
  }
  ASSERT_STREQ(events, "counted");
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v5_->init(&context, 0x5555000000000005, &mask, "counted", 1, 2, 0, capture_log),
            ncclSuccess);
  EXPECT_EQ(mask, ncclProfileColl | ncclProfileP2p);
  NcclComm<ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t> counted(v5_, context);
  void* handle = counted.start([] {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileColl;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.count = 256;
    d.coll.nChannels = 2;
    return d;
  }());
  EXPECT_EQ(handle, nullptr) << "nothing to time: no slot is held for channels that never come";
  counted.finalize();
  ProcessProfile profile = read_profile();
  const CommProfile* c = comm(profile, 0x5555000000000005);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(cell(*c, "all_reduce", 1024)->ops, 1u);
}

TEST_F(PluginTest, WhatNcclMayHandOverIsSurvived) {
  // Null pointers and a communicator with an impossible rank: no crash, ncclSuccess, and
  // the activation mask still set (NCCL keeps one for the whole process).
  int mask = 0;
  void* context = reinterpret_cast<void*>(1);
  EXPECT_EQ(v5_->init(&context, 7, &mask, nullptr, 1, 4, 9, capture_log), ncclSuccess);
  EXPECT_EQ(context, nullptr);
  EXPECT_EQ(mask, kMask);
  EXPECT_EQ(v5_->init(nullptr, 7, &mask, nullptr, 1, 4, 0, capture_log), ncclInvalidArgument);
  void* handle = reinterpret_cast<void*>(1);
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileColl; // func and datatype left null
  EXPECT_EQ(v5_->startEvent(nullptr, &handle, &d), ncclSuccess);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(v5_->startEvent(nullptr, nullptr, &d), ncclSuccess);
  EXPECT_EQ(v5_->startEvent(nullptr, &handle, nullptr), ncclSuccess);
  EXPECT_EQ(v5_->stopEvent(nullptr), ncclSuccess);
  EXPECT_EQ(v5_->stopEvent(&mask), ncclSuccess);
  EXPECT_EQ(v5_->recordEventState(&mask, ncclProfilerKernelChStop, nullptr), ncclSuccess);
  EXPECT_EQ(v5_->finalize(nullptr), ncclSuccess);
  std::lock_guard lock(g_log_mutex);
  bool warned = false;
  for (const auto& line : g_log)
    warned |= line.find("WARN fabric profiler: communicator with rank 9 of 4") == 0;
  EXPECT_TRUE(warned);
}

TEST_F(PluginTest, TheFirstInitSaysWhereItWrites) {
  init_v5(0x1000000000000001, 2, 0).finalize();
  std::lock_guard lock(g_log_mutex);
  std::size_t announced = 0;
  for (const auto& line : g_log) {
    if (line.find("INFO fabric profiler: writing " + plugin_dir() + "/nccl-") == 0 &&
        line.ends_with(".prof every 3600 s")) {
      ++announced;
    }
  }
  EXPECT_EQ(announced, 1u);
}

} // namespace
} // namespace fabric::nccl_profiler
