// -I 1 on the nccl engine, over the recording stand-in for NCCL and the CUDA runtime
// (fake_nccl.h; no GPU here), as nccl-tests 2.19 times it:
//   - an event recorded on every GPU's stream at the start of each timed iteration (before
//     its group of -m operations) and one after the last; each iteration's time is the
//     elapsed time between its events divided by -m, the slowest GPU's;
//   - -z 3 takes the times of its own per-iteration start and stop events;
//   - the events are made on each GPU's device and destroyed once read.
// What a GPU run adds (scripts/gpu_check.sh): that CUDA's events give these times.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "nccltest/engine_nccl.h"
#include "tests/unit/nccltest/fake_nccl.h"

namespace fabric::nccltest::nccl {
namespace {

using fake::fake_comm;
using Names = std::vector<std::string>;

CollectiveCall all_reduce_over(int nranks) {
  CollectiveCall call;
  call.counts = collective_counts(Collective::kAllReduce, 16, 4, nranks);
  return call;
}

class NcclEnginePerIteration : public testing::Test {
protected:
  void SetUp() override {
    fake::g_state = &fake_;
    fake::add_event_clock(api_);
  }
  void TearDown() override { fake::g_state = nullptr; }
  Names names_since_clear() {
    std::lock_guard lock(fake_.mutex);
    Names out;
    for (const fake::Call& c : fake_.calls)
      out.push_back(c.name);
    return out;
  }
  void clear() {
    std::lock_guard lock(fake_.mutex);
    fake_.calls.clear();
  }
  int device_of(int event) {
    std::lock_guard lock(fake_.mutex);
    return fake_.event_devices[static_cast<std::size_t>(event)];
  }
  fake::State fake_;
  Api api_ = fake::api();
};

TEST_F(NcclEnginePerIteration, AnEventStartsEachIterationAndTheirGapsOverMAreItsTimes) {
  auto engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  fake_.stream_busy = false;
  const int before = fake_.events_created; // the engine's own start and stop
  // The iteration that starts at the k-th new event takes k milliseconds.
  fake_.event_ms = [before](int start, int) {
    return start > before ? static_cast<float>(start - before) : 100.0f;
  };
  clear();
  std::vector<double> iterations = {42}; // replaced, not appended to
  TimingOptions timing;
  timing.iters = 3;
  timing.agg_iters = 2;
  timing.iteration_seconds = &iterations;
  auto seconds = (*engine)->timed_run(all_reduce_over(2), timing);
  ASSERT_TRUE(seconds.ok()) << seconds.error().message();
  Names expected = {"ncclAllReduce", "wait", "barrier", "wait", "cudaEventRecord"};
  for (int i = 0; i < 3; ++i) {
    expected.insert(expected.end(), {"cudaEventRecord", "ncclGroupStart", "ncclAllReduce",
                                     "ncclAllReduce", "ncclGroupEnd"});
  }
  expected.insert(expected.end(), {"cudaEventRecord", "cudaEventRecord", "wait"});
  EXPECT_EQ(names_since_clear(), expected);
  ASSERT_EQ(iterations.size(), 3u);
  EXPECT_DOUBLE_EQ(iterations[0], 0.5e-3);
  EXPECT_DOUBLE_EQ(iterations[1], 1.0e-3);
  EXPECT_DOUBLE_EQ(iterations[2], 1.5e-3);
  // The row's own time still comes from the start and stop events, per operation.
  EXPECT_DOUBLE_EQ(*seconds, 100e-3 / 6);
  // Four events for three iterations, all destroyed once read.
  EXPECT_EQ(fake_.events_created - before, 4);
  EXPECT_EQ(fake_.events_destroyed, 4);
}

TEST_F(NcclEnginePerIteration, EachIterationIsTheSlowestGpusOnItsOwnDevicesEvents) {
  fake_.nranks = 4;
  auto engine = make_nccl_engine(api_, {Member{fake_comm(0), 2}, Member{fake_comm(1), 3}});
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  fake_.stream_busy = false;
  const int before = fake_.events_created;
  // Each GPU's marks are made in turn: device 2's four, then device 3's. Device 2's second
  // iteration is slow, and device 3's first.
  fake_.event_ms = [before](int start, int) {
    if (start == before + 2) return 5.0f;
    if (start == before + 5) return 9.0f;
    return 1.0f;
  };
  std::vector<double> iterations;
  TimingOptions timing;
  timing.iters = 3;
  timing.iteration_seconds = &iterations;
  ASSERT_TRUE((*engine)->timed_run(all_reduce_over(4), timing).ok());
  EXPECT_EQ(iterations, (std::vector<double>{9e-3, 5e-3, 1e-3}));
  // Each GPU's four events on its own device.
  ASSERT_EQ(fake_.events_created, before + 8);
  for (int e = before + 1; e <= before + 8; ++e)
    EXPECT_EQ(device_of(e), e <= before + 4 ? 2 : 3) << "event " << e;
  EXPECT_EQ(fake_.events_destroyed, 8);
}

TEST_F(NcclEnginePerIteration, ZThreeTimesEachIterationBetweenItsOwnEvents) {
  auto engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(engine.ok());
  fake_.stream_busy = false;
  const int before = fake_.events_created;
  int calls = 0;
  fake_.event_ms = [&](int, int) { return static_cast<float>(++calls) * 2; };
  std::vector<double> iterations;
  TimingOptions timing;
  timing.iters = 3;
  timing.agg_iters = 2;
  timing.blocking = 3;
  timing.iteration_seconds = &iterations;
  auto seconds = (*engine)->timed_run(all_reduce_over(2), timing);
  ASSERT_TRUE(seconds.ok());
  EXPECT_EQ(iterations, (std::vector<double>{1e-3, 2e-3, 3e-3}));
  EXPECT_DOUBLE_EQ(*seconds, 12e-3 / 6);
  EXPECT_EQ(fake_.events_created, before); // no events of its own
}

TEST_F(NcclEnginePerIteration, WithoutItNoEventIsMadeAndNothingIsFilled) {
  auto engine = make_nccl_engine(api_, fake_comm(), 0);
  ASSERT_TRUE(engine.ok());
  fake_.stream_busy = false;
  const int before = fake_.events_created;
  TimingOptions timing;
  timing.iters = 3;
  ASSERT_TRUE((*engine)->timed_run(all_reduce_over(2), timing).ok());
  EXPECT_EQ(fake_.events_created, before);
}

} // namespace
} // namespace fabric::nccltest::nccl
