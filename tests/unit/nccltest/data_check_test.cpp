// The host side of a check (a node without the device kernels, and the mpi backend): data
// staged through one buffer of at most kCheckChunkBytes at any message size, a wrong
// element found and located across chunk boundaries, a beat after every chunk so that the
// watchdog sees a long check progress; and -c 0 filling nothing. A fake engine stands in
// for GPU memory (no GPU here) and records every copy the check asks of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "nccltest/data_check.h"
#include "nccltest/fault.h"
#include "nccltest/group.h"
#include "nccltest/options.h"
#include "nccltest/progress.h"
#include "nccltest/sweep.h"

namespace fabric::nccltest {
namespace {

// One rank whose "device" buffers are host vectors; the collective is a copy of the input
// to the output (a one-rank all-reduce, sum).
class HostBufferEngine final : public Engine {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Result<void> allocate(std::size_t send_bytes, std::size_t recv_bytes) override {
    send_.assign(send_bytes, std::byte{0});
    recv_.assign(recv_bytes, std::byte{0});
    return Ok();
  }
  Result<double> timed_run(const CollectiveCall& call, const TimingOptions&) override {
    FABRIC_TRY(run_once(call));
    return 1e-3;
  }
  Result<void> run_once(const CollectiveCall& call) override {
    ++operations;
    const std::size_t bytes = call.counts.send * data_type_size(call.type);
    std::memcpy(recv_.data(), send_.data(), bytes);
    return Ok();
  }
  Result<void> copy_in(const CollectiveCall&, Region region, std::size_t offset,
                       std::span<const std::byte> bytes) override {
    largest_copy = std::max(largest_copy, bytes.size());
    ++copies_in;
    std::byte* base = (region == Region::kInput ? send_.data() : recv_.data()) + offset;
    std::memcpy(base, bytes.data(), bytes.size());
    return Ok();
  }
  Result<void> copy_out(const CollectiveCall&, Region region, std::size_t offset,
                        std::span<std::byte> bytes) override {
    largest_copy = std::max(largest_copy, bytes.size());
    ++copies_out;
    const std::byte* base = (region == Region::kInput ? send_.data() : recv_.data()) + offset;
    std::memcpy(bytes.data(), base, bytes.size());
    return Ok();
  }
  Result<std::unique_ptr<Engine>> split(int, int) override { return std::unique_ptr<Engine>(); }
  void poll_aborts(const AbortRequest*) override {}

  std::vector<std::byte>& output() { return recv_; }
  std::size_t largest_copy = 0;
  int copies_in = 0, copies_out = 0, operations = 0;

private:
  std::vector<std::byte> send_, recv_;
};

CollectiveCall all_reduce_of(std::size_t bytes, DataType type) {
  CollectiveCall call;
  call.collective = Collective::kAllReduce;
  call.type = type;
  call.counts = collective_counts(call.collective, bytes, data_type_size(type), 1);
  return call;
}

// 2.5 chunks of doubles: three copies each way, the last one short.
constexpr std::size_t kBytes = kCheckChunkBytes * 5 / 2;

// One fill and verification of 2.5 chunks (160 MiB: generating it is the test's cost).
TEST(DataCheck, StagesAtMostOneChunkBeatsAfterEachAndLocatesAWrongElementInALaterChunk) {
  HostBufferEngine engine;
  ASSERT_TRUE(engine.allocate(kBytes, kBytes).ok());
  const CollectiveCall call = all_reduce_of(kBytes, DataType::kDouble);
  const CheckSpec spec = check_spec(engine, call, 3);
  int beats = 0;
  ASSERT_TRUE(fill_checked_input(engine, call, spec, [&] { ++beats; }).ok());
  EXPECT_EQ(engine.copies_in, 3);
  EXPECT_EQ(beats, 3);
  ASSERT_TRUE(engine.run_once(call).ok());
  // An element of the third chunk, and one after it: the first is reported.
  const std::size_t wrong_at = 2 * kCheckChunkBytes / sizeof(double) + 17;
  for (std::size_t i : {wrong_at, wrong_at + 5}) {
    double v = 0;
    std::memcpy(&v, engine.output().data() + i * sizeof(double), sizeof v);
    v += 1;
    std::memcpy(engine.output().data() + i * sizeof(double), &v, sizeof v);
  }
  auto outcome = verify_checked_output(engine, call, spec, [&] { ++beats; });
  ASSERT_TRUE(outcome.ok()) << outcome.error().message();
  EXPECT_EQ(engine.copies_out, 3);
  EXPECT_EQ(beats, 6);
  EXPECT_EQ(engine.largest_copy, kCheckChunkBytes);
  EXPECT_EQ(outcome->checked, kBytes / sizeof(double));
  EXPECT_EQ(outcome->wrong, 2u);
  EXPECT_EQ(outcome->first_index, wrong_at);
  EXPECT_EQ(outcome->first_got, outcome->first_expected + 1);
  EXPECT_EQ(outcome->first_expected, expected_output(spec, wrong_at));
}

TEST(DataCheck, TheCorruptionFaultIsCaughtOnTheFirstElement) {
  HostBufferEngine engine;
  ASSERT_TRUE(engine.allocate(4096, 4096).ok());
  const CollectiveCall call = all_reduce_of(4096, DataType::kFloat);
  const CheckSpec spec = check_spec(engine, call, 1);
  ASSERT_TRUE(fill_checked_input(engine, call, spec).ok());
  ASSERT_TRUE(engine.run_once(call).ok());
  ASSERT_TRUE(corrupt_first_output(engine, call).ok());
  auto outcome = verify_checked_output(engine, call, spec);
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->wrong, 1u);
  EXPECT_EQ(outcome->first_index, 0u);
}

TEST(DataCheck, ABeatDuringACheckRestartsTheWatchdogClock) {
  const auto timeout = std::chrono::seconds(10);
  const auto start = WatchdogClock::now();
  ProgressBoard board(1, timeout, start);
  Progress progress;
  progress.attach_board(&board, 0);
  Beat beat = progress.begin("check", "all_reduce", 1024);
  WatchdogClock::time_point entered = WatchdogClock::now();
  while (WatchdogClock::now() == entered) {
  }
  const WatchdogClock::time_point before_again = WatchdogClock::now();
  // Just past the timeout counted from the phase's start, the rank would be reported...
  ASSERT_TRUE(board.check(before_again + timeout).has_value());
  progress.again(beat);
  // ...but a beat inside the phase restarts its clock.
  EXPECT_FALSE(board.check(before_again + timeout).has_value());
}

// -c 0: the timed loop runs on the buffers as they are; nothing is generated or copied.
TEST(DataCheck, NoCheckMeansNoFill) {
  HostBufferEngine engine;
  ASSERT_TRUE(engine.allocate(1 << 20, 1 << 20).ok());
  Options options;
  options.check_iters = 0;
  auto group = make_single_group();
  Progress progress;
  FaultPlan fault;
  std::vector<RankInfo> ranks;
  SweepContext context{options, engine, *group, progress, fault, ranks};
  TimingOptions timing;
  auto placed =
      measure_placement(context, all_reduce_of(1 << 20, DataType::kFloat), 1 << 20, timing);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  EXPECT_EQ(engine.copies_in, 0);
  EXPECT_EQ(engine.copies_out, 0);
  EXPECT_FALSE(placed->result.wrong.has_value());

  options.check_iters = 2;
  placed = measure_placement(context, all_reduce_of(1 << 20, DataType::kFloat), 1 << 20, timing);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(engine.copies_in, 3); // the fill before timing, then one per check
  EXPECT_EQ(engine.copies_out, 2);
  EXPECT_EQ(placed->result.wrong, 0);
}

} // namespace
} // namespace fabric::nccltest
