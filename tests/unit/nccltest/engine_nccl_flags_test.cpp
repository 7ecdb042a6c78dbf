// nccl-tests' -y, -x, -M and NCCL_TESTS_SPLIT with several GPUs per process, through the
// engine interface over the recording stand-in for NCCL and CUDA (fake_nccl.h; no GPU):
//   - -y 1 creates no stream and runs every operation and wait on CUDA's legacy default
//     stream (nullptr), as nccl-tests' stream_null;
//   - -x reaches every communicator's ncclConfig_t (made and split), with nccl-tests'
//     version rules and lines; nvlinkCentricSched is set from NCCL 2.28, as nccl-tests
//     built against 2.28 sets it;
//   - -M's figures are the largest drops of cudaMemGetInfo's free memory over the GPUs:
//     around the communicators' creation, the buffers' allocation, and the sizes;
//   - NCCL_TESTS_SPLIT with -g and -t: every communicator of a process split in one NCCL
//     group, with keys that give each group's ranks nccl-tests' numbering
//     (ncclProc x nThreads x nGpus + i, ncclProc the process's place in its colour).
// What only a GPU shows (scripts/gpu_check.sh's stream_null, cta_policy and memory_report
// steps): that a real NCCL takes these and the data checks clean.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "nccltest/comm_split.h"
#include "nccltest/engine_nccl.h"
#include "nccltest/engine_threads.h"
#include "nccltest/memory_report.h"
#include "tests/unit/nccltest/fake_nccl.h"

namespace fabric::nccltest::nccl {
namespace {

using fake::Call;
using fake::fake_comm;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

class NcclEngineFlags : public testing::Test {
protected:
  void SetUp() override {
    fake::g_state = &fake_;
    fake_.nranks = 8;
    fake::add_split(api_);
  }
  void TearDown() override { fake::g_state = nullptr; }

  // Process `process`'s two GPUs (devices 2 and 3), communicators 2p and 2p + 1.
  std::unique_ptr<Engine> two_gpus(int process = 0, const EngineConfig& config = {}) {
    auto engine = make_nccl_engine(
        api_, {Member{fake_comm(2 * process), 2}, Member{fake_comm(2 * process + 1), 3}}, config);
    EXPECT_TRUE(engine.ok()) << engine.error().message();
    return engine.ok() ? std::move(*engine) : nullptr;
  }
  std::vector<Call> calls(const std::string& name = "") {
    std::lock_guard lock(fake_.mutex);
    std::vector<Call> out;
    for (const Call& c : fake_.calls)
      if (name.empty() || c.name == name) out.push_back(c);
    return out;
  }
  void forget() {
    std::lock_guard lock(fake_.mutex);
    fake_.calls.clear();
  }
  fake::State fake_;
  Api api_ = fake::api();
};

CollectiveCall all_reduce_over(int nranks) {
  CollectiveCall call;
  call.counts = collective_counts(Collective::kAllReduce, 64, 4, nranks);
  return call;
}

TEST_F(NcclEngineFlags, StreamNullRunsEveryOperationAndWaitOnTheLegacyDefaultStream) {
  EngineConfig config;
  config.stream_null = true;
  auto engine = two_gpus(0, config);
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(fake_.streams, 0) << "-y 1 created a stream";
  fake_.stream_busy = false;
  forget();
  ASSERT_TRUE(engine->run_once(all_reduce_over(8)).ok());
  std::vector<Call> launched = calls("ncclAllReduce");
  std::vector<Call> waited = calls("wait");
  ASSERT_EQ(launched.size(), 2u);
  ASSERT_EQ(waited.size(), 2u);
  for (const Call& c : launched)
    EXPECT_EQ(c.stream, -1) << "launched on stream " << c.stream << ", not CUDA's default one";
  for (const Call& c : waited)
    EXPECT_EQ(c.stream, -1);

  // Without -y, each GPU has a non-blocking stream of its own.
  auto plain = two_gpus(1);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(fake_.streams, 2);
}

TEST_F(NcclEngineFlags, CtaPolicyReachesEveryCommunicatorMadeAndSplit) {
  EngineConfig config;
  config.cta_policy = 1;
  config.nvlink_centric_sched = true;
  ncclUniqueId id{};
  auto comms = init_comms(api_, id, 8, 2, {2, 3}, config);
  ASSERT_TRUE(comms.ok()) << comms.error().message();
  std::vector<Call> made = calls("ncclCommInitRankConfig");
  ASSERT_EQ(made.size(), 2u);
  for (const Call& c : made) {
    EXPECT_EQ(c.cta_policy, 1);
    EXPECT_EQ(c.nvlink_centric_sched, 1);
  }
  auto engine = two_gpus(1, config);
  ASSERT_NE(engine, nullptr);
  auto sub = engine->split(0, 1);
  ASSERT_TRUE(sub.ok()) << sub.error().message();
  std::vector<Call> split = calls("ncclCommSplit");
  ASSERT_EQ(split.size(), 2u);
  for (const Call& c : split)
    EXPECT_EQ(c.cta_policy, 1) << "the split communicator lost -x";

  // Without -x the field is left to NCCL.
  forget();
  ASSERT_TRUE(init_comms(api_, id, 8, 2, {2, 3}).ok());
  for (const Call& c : calls("ncclCommInitRankConfig")) {
    EXPECT_EQ(c.cta_policy, NCCL_CONFIG_UNDEF_INT);
    EXPECT_EQ(c.nvlink_centric_sched, NCCL_CONFIG_UNDEF_INT);
  }
}

TEST_F(NcclEngineFlags, CtaPolicyFollowsNcclTestsVersionRules) {
  CommConfigPlan plain = plan_comm_config(-1, 22809);
  EXPECT_EQ(plain.cta_policy, -1);
  EXPECT_TRUE(plain.nvlink_centric_sched);
  EXPECT_EQ(plain.note, "");
  CommConfigPlan zero = plan_comm_config(2, 22809);
  EXPECT_EQ(zero.cta_policy, 2);
  CommConfigPlan efficiency = plan_comm_config(1, 22703);
  EXPECT_EQ(efficiency.cta_policy, 1);
  EXPECT_FALSE(efficiency.nvlink_centric_sched) << "NCCL 2.27 has no nvlinkCentricSched";
  CommConfigPlan too_old_for_zero = plan_comm_config(2, 22703);
  EXPECT_EQ(too_old_for_zero.cta_policy, -1);
  EXPECT_EQ(too_old_for_zero.note,
            "Option -x (cta_policy) 2 is not supported before NCCL 2.28. Ignoring");
  CommConfigPlan too_old = plan_comm_config(0, 22603);
  EXPECT_EQ(too_old.cta_policy, -1);
  EXPECT_EQ(too_old.note, "Option -x (cta_policy) is not supported before NCCL 2.27. Ignoring");
}

TEST_F(NcclEngineFlags, MemoryFiguresAreTheLargestDropOfFreeMemoryOverTheGpus) {
  fake_.init_bytes = 300 * kMiB; // what NCCL takes per communicator
  ncclUniqueId id{};
  auto before_init = free_memory(api_, {2, 3});
  ASSERT_TRUE(before_init.ok());
  ASSERT_TRUE(init_comms(api_, id, 8, 0, {2, 3}).ok());
  auto after_init = free_memory(api_, {2, 3});
  ASSERT_TRUE(after_init.ok());
  GpuMemoryUsage usage;
  usage.initialization = largest_drop(*before_init, *after_init);
  EXPECT_EQ(usage.initialization, 300 * kMiB);

  auto engine = two_gpus();
  ASSERT_NE(engine, nullptr);
  auto before_buffers = engine->free_device_memory();
  ASSERT_TRUE(before_buffers.ok());
  ASSERT_EQ(before_buffers->size(), 2u) << "one figure per GPU";
  ASSERT_TRUE(engine->allocate(64 * kMiB, 64 * kMiB).ok());
  auto after_buffers = engine->free_device_memory();
  ASSERT_TRUE(after_buffers.ok());
  usage.user_allocated = largest_drop(*before_buffers, *after_buffers);
  EXPECT_EQ(usage.user_allocated, 128 * kMiB) << "both buffers of one GPU";
  EXPECT_EQ(render_memory_usage(usage),
            "# GPU memory usage     : Initialization 300 MB | User-Allocated 128 MB | "
            "Collective 0.00 B | Total  428 MB\n");
}

// Each (communicator, colour, key) the engines passed to ncclCommSplit, ranked as NCCL
// ranks a split: by key within the colour.
std::map<int, int> ranks_by_key(const std::vector<Call>& splits) {
  std::map<int, std::vector<std::pair<int, int>>> by_color; // colour -> (key, comm)
  for (const Call& c : splits)
    by_color[c.color].push_back({c.key, c.comm});
  std::map<int, int> rank_of_comm;
  for (auto& [color, members] : by_color) {
    std::sort(members.begin(), members.end());
    for (std::size_t r = 0; r < members.size(); ++r)
      rank_of_comm[members[r].second] = static_cast<int>(r);
  }
  return rank_of_comm;
}

TEST_F(NcclEngineFlags, SplitWithSeveralGpusGivesEachGroupNcclTestsNumbering) {
  // Four processes of -g 2 (world ranks 2p and 2p + 1), NCCL_TESTS_SPLIT="MOD 2".
  std::vector<std::unique_ptr<Engine>> processes;
  for (int p = 0; p < 4; ++p)
    processes.push_back(two_gpus(p));
  forget();
  for (int p = 0; p < 4; ++p) {
    auto color = split_color(nullptr, "MOD 2", p);
    ASSERT_TRUE(color.ok() && color->has_value());
    auto sub = processes[static_cast<std::size_t>(p)]->split(**color, p);
    ASSERT_TRUE(sub.ok()) << sub.error().message();
    ASSERT_NE(*sub, nullptr);
    EXPECT_EQ((*sub)->local_ranks(), 2);
  }
  std::vector<Call> all;
  for (const Call& c : calls())
    if (c.name == "ncclGroupStart" || c.name == "ncclGroupEnd" || c.name == "ncclCommSplit")
      all.push_back(c);
  // Each process's two communicators split inside one group, as NCCL requires of them.
  ASSERT_EQ(all.size(), 16u);
  for (std::size_t p = 0; p < 4; ++p) {
    EXPECT_EQ(all[4 * p].name, "ncclGroupStart");
    EXPECT_EQ(all[4 * p + 1].name, "ncclCommSplit");
    EXPECT_EQ(all[4 * p + 2].name, "ncclCommSplit");
    EXPECT_EQ(all[4 * p + 3].name, "ncclGroupEnd");
  }
  // nccl-tests: colour = proc % 2, ncclProc = the process's place among its colour's,
  // rank = ncclProc x nGpus + i.
  std::map<int, int> ranks = ranks_by_key(calls("ncclCommSplit"));
  for (int p = 0; p < 4; ++p) {
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(ranks[2 * p + i], (p / 2) * 2 + i) << "process " << p << " GPU " << i;
    }
  }
  for (const Call& c : calls("ncclCommSplit"))
    EXPECT_EQ(c.color, (c.comm / 2) % 2);
}

TEST_F(NcclEngineFlags, SplitWithThreadsSplitsOnEachOwningThreadWithNcclTestsNumbering) {
  // Process 1 of two, -t 2 -g 2: world ranks 4 to 7 (communicators 4 to 7), thread t's
  // GPUs 2t and 2t + 1 of the process; NCCL_TESTS_SPLIT_MASK=0x1 makes it colour 1.
  std::vector<EngineMaker> makers;
  for (int t = 0; t < 2; ++t) {
    makers.push_back([this, t]() -> Result<std::unique_ptr<Engine>> {
      return make_nccl_engine(
          api_, {Member{fake_comm(4 + 2 * t), 2 * t}, Member{fake_comm(5 + 2 * t), 2 * t + 1}});
    });
  }
  auto engine = make_threaded_engine(std::move(makers));
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  auto color = split_color("0x1", nullptr, 1);
  ASSERT_TRUE(color.ok() && color->has_value());
  EXPECT_EQ(**color, 1);
  auto sub = (*engine)->split(**color, 1);
  ASSERT_TRUE(sub.ok()) << sub.error().message();
  ASSERT_NE(*sub, nullptr);
  EXPECT_EQ((*sub)->local_ranks(), 4);
  std::vector<Call> splits = calls("ncclCommSplit");
  ASSERT_EQ(splits.size(), 4u);
  std::map<int, int> key_of_comm;
  std::map<int, std::thread::id> thread_of_comm;
  for (const Call& c : splits) {
    key_of_comm[c.comm] = c.key;
    thread_of_comm[c.comm] = c.thread;
    EXPECT_NE(c.thread, std::this_thread::get_id()) << "split by the calling thread";
  }
  // Keys are the world ranks: within the colour, process 1's GPUs follow every earlier
  // process's, thread by thread, as nccl-tests numbers them.
  EXPECT_EQ(key_of_comm, (std::map<int, int>{{4, 4}, {5, 5}, {6, 6}, {7, 7}}));
  EXPECT_EQ(thread_of_comm[4], thread_of_comm[5]);
  EXPECT_EQ(thread_of_comm[6], thread_of_comm[7]);
  EXPECT_NE(thread_of_comm[4], thread_of_comm[6]);
  // The split engine runs on the new communicators, every thread at once.
  fake_.stream_busy = false;
  forget();
  ASSERT_TRUE((*sub)->run_once(all_reduce_over(8)).ok());
  std::set<int> launched;
  for (const Call& c : calls("ncclAllReduce"))
    launched.insert(c.comm);
  EXPECT_EQ(launched, (std::set<int>{fake::kSplitBase + 4, fake::kSplitBase + 5,
                                     fake::kSplitBase + 6, fake::kSplitBase + 7}));
}

} // namespace
} // namespace fabric::nccltest::nccl
