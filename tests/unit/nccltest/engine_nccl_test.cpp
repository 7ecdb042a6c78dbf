// The nccl engine over a recording stand-in for NCCL and the CUDA runtime (no GPU here):
// the order of its calls is what these tests check.
//   - The watchdog's order, posted from another thread, is carried out by the thread that
//     owns the communicator, and nothing calls into the communicator after ncclCommAbort.
//   - -G: the graph is captured and instantiated before the barrier that starts the timing.
//   - -z 1: each operation is waited for and followed by a barrier, as in nccl-tests.
//   - Without ncclCommSplit (NCCL before 2.18) the engine loads, and only a split refuses.
// What a GPU run adds: that a real NCCL behaves as the stand-in does (a stuck collective
// returns once ncclCommAbort is called; graph launches time the captured operations).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "nccltest/abort_request.h"
#include "nccltest/engine_nccl.h"

namespace fabric::nccltest::nccl {
namespace {

// One record per call into the stand-in: which entry point, from which thread.
struct Call {
  std::string name;
  std::thread::id thread;
};

struct FakeState {
  std::mutex mutex;
  std::vector<Call> calls;
  std::atomic<bool> stream_busy{true}; // the collective never completes by itself
  std::atomic<int> async_queries{0};
  int rank = 0;
  std::vector<std::vector<unsigned char>> premul_scalars; // as NCCL read them, per call
  std::vector<ncclDataType_t> premul_types;
  std::vector<std::ptrdiff_t> send_offsets; // each all-reduce's send buffer, from the start
  const char* memory = nullptr;
  void record(const char* name) {
    std::lock_guard lock(mutex);
    calls.push_back({name, std::this_thread::get_id()});
  }
};
FakeState* g_fake = nullptr;

ncclComm_t fake_comm() {
  static int storage;
  return reinterpret_cast<ncclComm_t>(&storage);
}

Api fake_api() {
  Api a;
  a.comm_user_rank = [](const ncclComm_t, int* r) {
    *r = g_fake->rank;
    return ncclSuccess;
  };
  a.comm_count = [](const ncclComm_t, int* n) {
    *n = 2;
    return ncclSuccess;
  };
  a.comm_abort = [](ncclComm_t) {
    g_fake->record("ncclCommAbort");
    return ncclSuccess;
  };
  a.comm_destroy = [](ncclComm_t) {
    g_fake->record("ncclCommDestroy");
    return ncclSuccess;
  };
  a.comm_get_async_error = [](ncclComm_t, ncclResult_t* r) {
    g_fake->record("ncclCommGetAsyncError");
    ++g_fake->async_queries;
    *r = ncclSuccess;
    return ncclSuccess;
  };
  // The engine's barrier is a one-element int32 all-reduce; the tests' calls are floats.
  a.all_reduce = [](const void* send, void*, size_t count, ncclDataType_t type, ncclRedOp_t,
                    ncclComm_t, cudaStream_t) {
    g_fake->record(count == 1 && type == ncclInt32 ? "barrier" : "ncclAllReduce");
    if (!(count == 1 && type == ncclInt32))
      g_fake->send_offsets.push_back(static_cast<const char*>(send) - g_fake->memory);
    return ncclSuccess;
  };
  a.red_op_create_pre_mul_sum = [](ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                   ncclScalarResidence_t residence, ncclComm_t) {
    g_fake->record("ncclRedOpCreatePreMulSum");
    if (residence != ncclScalarHostImmediate) return ncclInvalidArgument;
    const auto* bytes = static_cast<const unsigned char*>(scalar);
    const std::size_t size = type == ncclFloat16 ? 2 : type == ncclUint8 ? 1 : 4;
    g_fake->premul_scalars.emplace_back(bytes, bytes + size);
    g_fake->premul_types.push_back(type);
    *op = static_cast<ncclRedOp_t>(ncclNumOps + 1);
    return ncclSuccess;
  };
  a.red_op_destroy = [](ncclRedOp_t op, ncclComm_t) {
    g_fake->record(op == ncclNumOps + 1 ? "ncclRedOpDestroy" : "ncclRedOpDestroy(unknown op)");
    return ncclSuccess;
  };
  a.group_start = [] {
    g_fake->record("ncclGroupStart");
    return ncclSuccess;
  };
  a.group_end = [] {
    g_fake->record("ncclGroupEnd");
    return ncclSuccess;
  };
  a.get_version = [](int* v) {
    *v = 21703;
    return ncclSuccess;
  };
  a.event_record = [](cudaEvent_t, cudaStream_t) {
    g_fake->record("cudaEventRecord");
    return cudaSuccess;
  };
  a.event_elapsed_time = [](float* ms, cudaEvent_t, cudaEvent_t) {
    *ms = 1;
    return cudaSuccess;
  };
  a.stream_begin_capture = [](cudaStream_t, cudaStreamCaptureMode) {
    g_fake->record("cudaStreamBeginCapture");
    return cudaSuccess;
  };
  a.stream_end_capture = [](cudaStream_t, cudaGraph_t* g) {
    g_fake->record("cudaStreamEndCapture");
    *g = reinterpret_cast<cudaGraph_t>(1);
    return cudaSuccess;
  };
  a.graph_instantiate_with_flags = [](cudaGraphExec_t* e, cudaGraph_t, unsigned long long) {
    g_fake->record("cudaGraphInstantiate");
    *e = reinterpret_cast<cudaGraphExec_t>(1);
    return cudaSuccess;
  };
  a.graph_destroy = [](cudaGraph_t) { return cudaSuccess; };
  a.graph_exec_destroy = [](cudaGraphExec_t) { return cudaSuccess; };
  a.graph_launch = [](cudaGraphExec_t, cudaStream_t) {
    g_fake->record("cudaGraphLaunch");
    return cudaSuccess;
  };
  a.get_error_string = [](ncclResult_t) { return "fake"; };
  a.set_device = [](int) { return cudaSuccess; };
  a.stream_create_with_flags = [](cudaStream_t* s, unsigned) {
    *s = reinterpret_cast<cudaStream_t>(1);
    return cudaSuccess;
  };
  a.stream_destroy = [](cudaStream_t) { return cudaSuccess; };
  a.event_create = [](cudaEvent_t* e) {
    *e = reinterpret_cast<cudaEvent_t>(1);
    return cudaSuccess;
  };
  a.event_destroy = [](cudaEvent_t) { return cudaSuccess; };
  a.malloc = [](void** p, size_t) {
    static char memory[4096];
    g_fake->memory = memory;
    *p = memory;
    return cudaSuccess;
  };
  a.free = [](void*) { return cudaSuccess; };
  a.stream_query = [](cudaStream_t) {
    if (g_fake->stream_busy) return cudaErrorNotReady;
    g_fake->record("wait");
    return cudaSuccess;
  };
  a.cuda_error_string = [](cudaError_t) { return "fake"; };
  return a;
}

CollectiveCall one_all_reduce() {
  CollectiveCall call;
  call.counts = collective_counts(Collective::kAllReduce, 16, 4, 2);
  return call;
}

class NcclEngine : public testing::Test {
protected:
  void SetUp() override { g_fake = &fake_; }
  void TearDown() override { g_fake = nullptr; }
  std::vector<Call> calls_after(const std::string& name) {
    std::lock_guard lock(fake_.mutex);
    std::vector<Call> out;
    bool seen = false;
    for (const Call& c : fake_.calls) {
      if (seen) out.push_back(c);
      seen = seen || c.name == name;
    }
    return out;
  }
  std::vector<std::string> names() {
    std::lock_guard lock(fake_.mutex);
    std::vector<std::string> out;
    for (const Call& c : fake_.calls)
      out.push_back(c.name);
    return out;
  }
  // The calls of one timed run, from a fresh record.
  std::vector<std::string> timed_run_calls(const TimingOptions& timing) {
    auto engine = make_nccl_engine(api_, fake_comm(), 0);
    EXPECT_TRUE(engine.ok());
    fake_.stream_busy = false;
    {
      std::lock_guard lock(fake_.mutex);
      fake_.calls.clear();
    }
    auto seconds = (*engine)->timed_run(one_all_reduce(), timing);
    EXPECT_TRUE(seconds.ok()) << seconds.error().message();
    return names();
  }
  FakeState fake_;
  Api api_ = fake_api();
};

using Calls = std::vector<std::string>;

TEST_F(NcclEngine, CudaGraphsAreInstantiatedBeforeTheBarrierThatStartsTheTiming) {
  TimingOptions timing;
  timing.iters = 2;
  timing.graph_launches = 3;
  EXPECT_EQ(
      timed_run_calls(timing),
      (Calls{"ncclAllReduce", "wait",                                    // the untimed one
             "cudaStreamBeginCapture", "ncclAllReduce", "ncclAllReduce", // captured
             "cudaStreamEndCapture", "cudaGraphInstantiate", "barrier", "wait", "cudaEventRecord",
             "cudaGraphLaunch", "cudaGraphLaunch", "cudaGraphLaunch", "cudaEventRecord", "wait"}));
}

TEST_F(NcclEngine, BlockingWaitsForEachOperationAndBarriersAfterIt) {
  TimingOptions timing;
  timing.iters = 2;
  timing.agg_iters = 2;
  timing.blocking = true;
  Calls each = {"ncclAllReduce", "wait", "barrier", "wait"};
  Calls expected = {"ncclAllReduce", "wait", "barrier", "wait", "cudaEventRecord"};
  for (int op = 0; op < 4; ++op)
    expected.insert(expected.end(), each.begin(), each.end());
  expected.insert(expected.end(), {"cudaEventRecord", "wait"});
  EXPECT_EQ(timed_run_calls(timing), expected);
}

TEST_F(NcclEngine, WithoutBlockingEachIterationIsOneGroupAndNothingWaits) {
  TimingOptions timing;
  timing.iters = 2;
  timing.agg_iters = 2;
  Calls expected = {"ncclAllReduce", "wait", "barrier", "wait", "cudaEventRecord"};
  for (int i = 0; i < 2; ++i)
    expected.insert(expected.end(),
                    {"ncclGroupStart", "ncclAllReduce", "ncclAllReduce", "ncclGroupEnd"});
  expected.insert(expected.end(), {"cudaEventRecord", "wait"});
  EXPECT_EQ(timed_run_calls(timing), expected);
}

TEST_F(NcclEngine, ZTwoWaitsWithoutBarrierAndZThreeBarriersPerIterationOutsideTheTime) {
  TimingOptions timing;
  timing.iters = 2;
  timing.agg_iters = 2;
  timing.blocking = 2;
  Calls expected = {"ncclAllReduce", "wait", "barrier", "wait", "cudaEventRecord"};
  for (int op = 0; op < 4; ++op)
    expected.insert(expected.end(), {"ncclAllReduce", "wait"});
  expected.insert(expected.end(), {"cudaEventRecord", "wait"});
  EXPECT_EQ(timed_run_calls(timing), expected);
  timing.blocking = 3;
  expected = {"ncclAllReduce", "wait", "barrier", "wait"};
  for (int i = 0; i < 2; ++i) {
    expected.insert(expected.end(),
                    {"cudaEventRecord", "ncclGroupStart", "ncclAllReduce", "ncclAllReduce",
                     "ncclGroupEnd", "cudaEventRecord", "wait", "barrier", "wait"});
  }
  EXPECT_EQ(timed_run_calls(timing), expected);
}

// As nccl-tests' startColl: operation i starts at slot i % (max bytes / message bytes), and
// -u moves every buffer by that many elements.
TEST_F(NcclEngine, OperationsRotateThroughTheBufferAndUnalignShiftsThem) {
  auto engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE((*engine)->allocate(64, 64).ok());
  fake_.stream_busy = false;
  CollectiveCall call = one_all_reduce(); // 16 bytes
  call.unalign = 1;
  TimingOptions timing;
  timing.iters = 5;
  timing.rotate_bytes = 48; // three slots
  fake_.send_offsets.clear();
  ASSERT_TRUE((*engine)->timed_run(call, timing).ok());
  EXPECT_EQ(fake_.send_offsets, (std::vector<std::ptrdiff_t>{4, 4, 20, 36, 4, 20}));
  EXPECT_EQ(rotation_offset(call, 48, 7), 16u);
  EXPECT_EQ(rotation_offset(call, 16, 7), 0u);
  EXPECT_EQ(rotation_offset(call, 31, 7), 0u);
}

TEST_F(NcclEngine, WithoutNcclCommSplitOnlyASplitRefusesNamingTheVersionNeeded) {
  api_.comm_split = nullptr; // NCCL 2.17
  auto engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(engine.ok());
  fake_.stream_busy = false;
  EXPECT_TRUE((*engine)->run_once(one_all_reduce()).ok());
  auto pair = (*engine)->split(0, 0);
  ASSERT_FALSE(pair.ok());
  EXPECT_EQ(pair.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(pair.error().message().find("needs ncclCommSplit, which NCCL 2.18 added; this NCCL "
                                        "is 2.17.3"),
            std::string::npos)
      << pair.error().message();
}

// mulsum as nccl-tests runs it: an operation made for each call with the rank's scalar, in
// the data's type, from host memory, and destroyed after the call.
TEST_F(NcclEngine, MulsumMakesAPreMulSumOperationPerCallWithTheRanksScalar) {
  fake_.rank = 1;
  auto engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(engine.ok());
  fake_.stream_busy = false;
  CollectiveCall call;
  call.op = ReduceOp::kMulSum;
  call.type = DataType::kUint8;
  call.counts = collective_counts(Collective::kAllReduce, 16, 1, 2);
  {
    std::lock_guard lock(fake_.mutex);
    fake_.calls.clear();
  }
  ASSERT_TRUE((*engine)->run_once(call).ok());
  EXPECT_EQ(names(),
            (Calls{"ncclRedOpCreatePreMulSum", "ncclAllReduce", "ncclRedOpDestroy", "wait"}));
  ASSERT_EQ(fake_.premul_scalars.size(), 1u);
  EXPECT_EQ(fake_.premul_types[0], ncclUint8);
  EXPECT_EQ(fake_.premul_scalars[0], (std::vector<unsigned char>{2})); // rank 1 scales by 2
  call.type = DataType::kHalf;
  call.counts = collective_counts(Collective::kAllReduce, 16, 2, 2);
  ASSERT_TRUE((*engine)->run_once(call).ok());
  EXPECT_EQ(fake_.premul_scalars[1], (std::vector<unsigned char>{0x00, 0x40})); // 2.0 as half
  // Collectives without an operation make none.
  call.collective = Collective::kAllGather;
  api_.all_gather = [](const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) {
    g_fake->record("ncclAllGather");
    return ncclSuccess;
  };
  auto gather_engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(gather_engine.ok());
  ASSERT_TRUE((*gather_engine)->run_once(call).ok());
  EXPECT_EQ(fake_.premul_scalars.size(), 2u);
}

TEST_F(NcclEngine, WithoutPreMulSumOnlyMulsumRefusesNamingTheCall) {
  api_.red_op_create_pre_mul_sum = nullptr;
  auto engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(engine.ok());
  fake_.stream_busy = false;
  EXPECT_TRUE((*engine)->run_once(one_all_reduce()).ok());
  CollectiveCall call = one_all_reduce();
  call.op = ReduceOp::kMulSum;
  auto refused = (*engine)->run_once(call);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.error().message().find("needs ncclRedOpCreatePreMulSum"), std::string::npos);
}

TEST(NcclApi, OptionalEntryPointsMayBeMissingRequiredOnesMayNot) {
  // A library table: every name resolves to a distinct address, except those removed.
  static char address;
  auto lacking = [](std::vector<std::string> missing) {
    return [missing](const char* name) -> void* {
      for (const std::string& m : missing)
        if (m == name) return nullptr;
      return &address;
    };
  };
  Api a;
  EXPECT_EQ(bind_api(a,
                     lacking({"ncclCommSplit", "ncclAlltoAll", "ncclGetLastError",
                              "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy"}),
                     lacking({})),
            "");
  EXPECT_EQ(a.red_op_create_pre_mul_sum, nullptr);
  EXPECT_EQ(a.comm_split, nullptr);
  EXPECT_EQ(a.all_to_all, nullptr);
  EXPECT_NE(a.all_reduce, nullptr);
  Api b;
  EXPECT_EQ(bind_api(b, lacking({"ncclAllReduce"}), lacking({})), "libnccl lacks ncclAllReduce");
  Api c;
  EXPECT_EQ(bind_api(c, lacking({}), lacking({"cudaStreamQuery"})),
            "libcudart lacks cudaStreamQuery");
  EXPECT_EQ(nccl_version_text(21703), "2.17.3");
  EXPECT_EQ(nccl_version_text(2708), "2.7.8");
}

TEST_F(NcclEngine, AnOrderFromAnotherThreadIsCarriedOutByTheOwner) {
  AbortRequest request;
  auto engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  (*engine)->poll_aborts(&request);
  const std::thread::id owner = std::this_thread::get_id();

  // The watchdog's thread posts once the owner is waiting in the stuck collective.
  std::thread watchdog([&] {
    while (fake_.async_queries.load() == 0)
      std::this_thread::yield();
    request.post(5, "watchdog: rank 1 is behind every other rank");
  });
  Result<void> ran = (*engine)->run_once(one_all_reduce());
  watchdog.join();

  ASSERT_FALSE(ran.ok());
  EXPECT_NE(ran.error().message().find("aborted (ncclCommAbort): watchdog: rank 1 is behind"),
            std::string::npos)
      << ran.error().message();
  {
    std::lock_guard lock(fake_.mutex);
    int aborts = 0;
    for (const Call& c : fake_.calls) {
      EXPECT_EQ(c.thread, owner) << c.name << " was called from another thread";
      aborts += c.name == "ncclCommAbort";
    }
    EXPECT_EQ(aborts, 1);
  }
  // The engine is unusable afterwards, and says so without touching the communicator.
  Result<void> again = (*engine)->run_once(one_all_reduce());
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message().find("the communicator was aborted"), std::string::npos);
  engine->reset(); // no ncclCommDestroy of an aborted communicator
  EXPECT_TRUE(calls_after("ncclCommAbort").empty())
      << calls_after("ncclCommAbort").front().name << " after ncclCommAbort";
}

TEST_F(NcclEngine, WithoutAnOrderTheCollectiveCompletesAndTheCommIsDestroyed) {
  AbortRequest request;
  auto engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(engine.ok());
  (*engine)->poll_aborts(&request);
  fake_.stream_busy = false;
  EXPECT_TRUE((*engine)->run_once(one_all_reduce()).ok());
  engine->reset();
  std::lock_guard lock(fake_.mutex);
  ASSERT_FALSE(fake_.calls.empty());
  EXPECT_EQ(fake_.calls.back().name, "ncclCommDestroy");
  for (const Call& c : fake_.calls)
    EXPECT_NE(c.name, "ncclCommAbort");
}

} // namespace
} // namespace fabric::nccltest::nccl
