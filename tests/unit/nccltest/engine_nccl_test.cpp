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
#include "tests/unit/nccltest/fake_nccl.h"

namespace fabric::nccltest::nccl {
namespace {

using fake::Call;
using fake::fake_comm;
using FakeState = fake::State;

CollectiveCall one_all_reduce() {
  CollectiveCall call;
  call.counts = collective_counts(Collective::kAllReduce, 16, 4, 2);
  return call;
}

class NcclEngine : public testing::Test {
protected:
  void SetUp() override { fake::g_state = &fake_; }
  void TearDown() override { fake::g_state = nullptr; }
  // The calls on a communicator after the first `name`.
  std::vector<Call> comm_calls_after(const std::string& name) {
    std::lock_guard lock(fake_.mutex);
    std::vector<Call> out;
    bool seen = false;
    for (const Call& c : fake_.calls) {
      if (seen && c.comm >= 0) out.push_back(c);
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
  Api api_ = fake::api();
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
  {
    std::lock_guard lock(fake_.mutex);
    fake_.calls.clear();
  }
  ASSERT_TRUE((*engine)->allocate(64, 64).ok());
  const char* send = nullptr; // the first buffer allocate() made
  for (const Call& c : fake_.calls)
    if (send == nullptr && c.pointer != nullptr) send = static_cast<const char*>(c.pointer);
  ASSERT_NE(send, nullptr);
  fake_.stream_busy = false;
  CollectiveCall call = one_all_reduce(); // 16 bytes
  call.unalign = 1;
  TimingOptions timing;
  timing.iters = 5;
  timing.rotate_bytes = 48; // three slots
  fake_.send_buffers.clear();
  ASSERT_TRUE((*engine)->timed_run(call, timing).ok());
  std::vector<std::ptrdiff_t> offsets;
  for (const void* p : fake_.send_buffers)
    offsets.push_back(static_cast<const char*>(p) - send);
  EXPECT_EQ(offsets, (std::vector<std::ptrdiff_t>{4, 4, 20, 36, 4, 20}));
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
  auto engine = make_nccl_engine(api_, fake_comm(1), 0); // communicator 1 is rank 1
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
    fake::record("ncclAllGather");
    return ncclSuccess;
  };
  auto gather_engine = make_nccl_engine(api_, fake_comm(1), 0);
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
  EXPECT_TRUE(comm_calls_after("ncclCommAbort").empty())
      << comm_calls_after("ncclCommAbort").front().name << " after ncclCommAbort";
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
