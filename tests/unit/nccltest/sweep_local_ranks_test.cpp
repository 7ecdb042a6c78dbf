// A process driving several ranks (nccl-tests' -g): the sweep fills and checks every local
// rank's data on its own, and a wrong result is named by its rank and device. The engine
// here is a real two-rank all-reduce (sum) over host buffers, one pair per local rank, so
// each rank's expected values depend on the other's input.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "nccltest/group.h"
#include "nccltest/sweep.h"

namespace fabric::nccltest {
namespace {

class TwoLocalRanks final : public Engine {
public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_ranks() const override { return 2; }
  Result<void> allocate(std::size_t send_bytes, std::size_t recv_bytes) override {
    for (int l = 0; l < 2; ++l) {
      send_[l].assign(send_bytes, std::byte{0});
      recv_[l].assign(recv_bytes, std::byte{0});
    }
    return Ok();
  }
  Result<double> timed_run(const CollectiveCall& call, const TimingOptions&) override {
    FABRIC_TRY(run_once(call));
    return 1e-3;
  }
  // float sum over both ranks, in or out of place (all_reduce's input then is its output).
  Result<void> run_once(const CollectiveCall& call) override {
    std::vector<float> sum(call.counts.param, 0.0f);
    for (int l = 0; l < 2; ++l) {
      const float* in = reinterpret_cast<const float*>(input(call, l));
      for (std::size_t i = 0; i < sum.size(); ++i)
        sum[i] += in[i];
    }
    for (int l = 0; l < 2; ++l)
      std::memcpy(recv_[l].data(), sum.data(), sum.size() * sizeof(float));
    return Ok();
  }
  Result<void> copy_in(const CollectiveCall& call, Region region, std::size_t offset,
                       std::span<const std::byte> bytes) override {
    std::byte* base = region == Region::kInput ? input(call, call.local) : recv_[call.local].data();
    std::memcpy(base + offset, bytes.data(), bytes.size());
    return Ok();
  }
  Result<void> copy_out(const CollectiveCall& call, Region region, std::size_t offset,
                        std::span<std::byte> bytes) override {
    const std::byte* base =
        region == Region::kInput ? input(call, call.local) : recv_[call.local].data();
    std::memcpy(bytes.data(), base + offset, bytes.size());
    return Ok();
  }
  Result<std::unique_ptr<Engine>> split(int, int) override { return std::unique_ptr<Engine>(); }
  void poll_aborts(const AbortRequest*) override {}

private:
  std::byte* input(const CollectiveCall& call, int l) {
    return call.in_place ? recv_[l].data() : send_[l].data();
  }
  std::vector<std::byte> send_[2], recv_[2];
};

struct SweepRun {
  SweepResult result;
  bool ok = false;
};

SweepRun sweep_with(const FaultPlan& fault) {
  Options o;
  o.sweep.min_bytes = o.sweep.max_bytes = 256;
  o.iters = 1;
  o.warmup_iters = 0;
  TwoLocalRanks engine;
  EXPECT_TRUE(engine.allocate(256, 256).ok());
  std::unique_ptr<Group> group = make_single_group();
  Progress progress;
  std::vector<RankInfo> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[r].rank = r;
    ranks[r].host = "node1";
    ranks[r].device = r + 4;
  }
  SweepContext context{o, engine, *group, progress, fault, ranks};
  auto swept = run_sweep(context, DataType::kFloat, ReduceOp::kSum, 0, {});
  EXPECT_TRUE(swept.ok()) << swept.error().message();
  SweepRun run;
  if (swept.ok()) {
    run.result = std::move(*swept);
    run.ok = true;
  }
  return run;
}

TEST(SweepLocalRanks, EveryLocalRankIsCheckedWithItsOwnRanksValues) {
  SweepRun run = sweep_with(FaultPlan{});
  ASSERT_TRUE(run.ok);
  ASSERT_EQ(run.result.rows.size(), 1u);
  EXPECT_EQ(run.result.rows[0].out_of_place.wrong, 0);
  EXPECT_EQ(run.result.rows[0].in_place.wrong, 0);
  EXPECT_EQ(run.result.rows[0].out_of_place.rank_time_us.size(), 2u); // one per rank
  EXPECT_TRUE(run.result.failures.empty());
}

TEST(SweepLocalRanks, AWrongResultOnTheSecondGpuNamesThatRankAndDevice) {
  FaultPlan fault;
  fault.corrupt_rank = 1;
  SweepRun run = sweep_with(fault);
  ASSERT_TRUE(run.ok);
  ASSERT_EQ(run.result.rows.size(), 1u);
  EXPECT_EQ(run.result.rows[0].out_of_place.wrong, 1);
  ASSERT_FALSE(run.result.failures.empty());
  for (const RankCheckFailure& f : run.result.failures) {
    EXPECT_EQ(f.rank, 1);
    EXPECT_EQ(f.device, 5);
    EXPECT_EQ(f.first_index, 0u);
  }
}

} // namespace
} // namespace fabric::nccltest
