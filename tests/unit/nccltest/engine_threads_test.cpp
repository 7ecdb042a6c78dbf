// nccl-tests' -t: the threaded engine over stand-in engines that record the thread of every
// call. Each thread's engine is made, used and destroyed on one thread of its own; every
// operation runs on all threads at once (a collective's ranks wait for each other); a local
// rank's copies go to the thread that owns its GPU; the run's abort order reaches every
// thread's engine, and one thread's failure ends the others' waits.
#include "nccltest/engine_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "nccltest/abort_request.h"

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;

// What the stand-ins saw, shared by all of them.
struct Record {
  std::mutex mutex;
  std::condition_variable arrived;
  int inside = 0;                                   // threads inside run_once now
  std::map<int, std::set<std::thread::id>> threads; // engine index -> threads that called it
  std::vector<std::pair<int, int>> copies;          // (engine index, local) of each copy_in
  void saw(int engine) {
    std::lock_guard lock(mutex);
    threads[engine].insert(std::this_thread::get_id());
  }
};

// Two local ranks (GPUs) per engine; run_once is a collective over every thread: it
// returns once all `threads` engines are inside it, or fails after 10 s (so a run that
// called the engines one after another fails instead of hanging). With `fail` it fails at
// once; otherwise, until all arrive, it polls the abort order as the nccl engine does.
class ThreadStandIn final : public Engine {
public:
  ThreadStandIn(Record& r, int index, int threads, bool fail)
      : r_(r), index_(index), threads_(threads), fail_(fail) {
    r_.saw(index_);
  }
  ~ThreadStandIn() override { r_.saw(index_); }
  int rank() const override { return index_ * 2; }
  int size() const override { return threads_ * 2; }
  int local_ranks() const override { return 2; }
  Result<void> allocate(std::size_t, std::size_t) override {
    r_.saw(index_);
    return Ok();
  }
  // -I 1: thread t's iteration t takes 5 ms, its others 1 ms.
  Result<double> timed_run(const CollectiveCall& call, const TimingOptions& timing) override {
    FABRIC_TRY(run_once(call));
    if (timing.iteration_seconds != nullptr) {
      timing.iteration_seconds->clear();
      for (int i = 0; i < timing.iters; ++i)
        timing.iteration_seconds->push_back(i == index_ ? 5e-3 : 1e-3);
    }
    return 1e-3 * (index_ + 1);
  }
  Result<void> run_once(const CollectiveCall&) override {
    r_.saw(index_);
    if (fail_) return Error(ErrorCode::kSystem, "the collective", "engine 1 broke");
    std::unique_lock lock(r_.mutex);
    ++r_.inside;
    r_.arrived.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (r_.inside < threads_) {
      if (abort_ != nullptr && abort_->requested()) {
        --r_.inside;
        return Error(ErrorCode::kSystem, "the collective", "aborted: " + abort_->reason());
      }
      if (std::chrono::steady_clock::now() > deadline) {
        --r_.inside;
        return Error(ErrorCode::kSystem, "the collective", "the other threads never came");
      }
      r_.arrived.wait_for(lock, 5ms);
    }
    r_.arrived.notify_all();
    return Ok();
  }
  Result<void> copy_in(const CollectiveCall& call, Region, std::size_t,
                       std::span<const std::byte>) override {
    r_.saw(index_);
    std::lock_guard lock(r_.mutex);
    r_.copies.emplace_back(index_, call.local);
    return Ok();
  }
  Result<void> copy_out(const CollectiveCall&, Region, std::size_t, std::span<std::byte>) override {
    return Ok();
  }
  Result<std::unique_ptr<Engine>> split(int, int) override { return std::unique_ptr<Engine>(); }
  void poll_aborts(const AbortRequest* request) override { abort_ = request; }

private:
  Record& r_;
  int index_, threads_;
  bool fail_;
  const AbortRequest* abort_ = nullptr;
};

std::unique_ptr<Engine> threaded(Record& r, int threads, int failing = -1) {
  std::vector<EngineMaker> makers;
  for (int t = 0; t < threads; ++t) {
    makers.push_back([&r, t, threads, failing]() -> Result<std::unique_ptr<Engine>> {
      return std::unique_ptr<Engine>(std::make_unique<ThreadStandIn>(r, t, threads, t == failing));
    });
  }
  auto engine = make_threaded_engine(std::move(makers));
  EXPECT_TRUE(engine.ok()) << engine.error().message();
  return engine.ok() ? std::move(*engine) : nullptr;
}

TEST(ThreadedEngine, EachThreadsEngineLivesOnOneThreadOfItsOwnAndAllRunAtOnce) {
  Record r;
  auto engine = threaded(r, 3);
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->local_ranks(), 6);
  EXPECT_EQ(engine->size(), 6);
  ASSERT_TRUE(engine->allocate(64, 64).ok());
  Result<void> ran = engine->run_once(CollectiveCall{});
  ASSERT_TRUE(ran.ok()) << ran.error().message(); // the three were inside at once
  r.inside = 0;
  auto seconds = engine->timed_run(CollectiveCall{}, TimingOptions{});
  ASSERT_TRUE(seconds.ok());
  EXPECT_DOUBLE_EQ(*seconds, 3e-3); // the slowest thread's time
  engine.reset();
  std::set<std::thread::id> all;
  for (const auto& [index, ids] : r.threads) {
    EXPECT_EQ(ids.size(), 1u) << "engine " << index << " was called from several threads";
    EXPECT_EQ(ids.count(std::this_thread::get_id()), 0u) << "engine " << index;
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(r.threads.size(), 3u);
  EXPECT_EQ(all.size(), 3u);
}

// As nccl-tests' GatherProcessMaxIterTimes: each iteration's time is its slowest thread's.
TEST(ThreadedEngine, EachIterationIsTheSlowestThreads) {
  Record r;
  auto engine = threaded(r, 3);
  ASSERT_NE(engine, nullptr);
  std::vector<double> iterations = {7};
  TimingOptions timing;
  timing.iters = 4;
  timing.iteration_seconds = &iterations;
  auto seconds = engine->timed_run(CollectiveCall{}, timing);
  ASSERT_TRUE(seconds.ok()) << seconds.error().message();
  EXPECT_EQ(iterations, (std::vector<double>{5e-3, 5e-3, 5e-3, 1e-3}));
}

TEST(ThreadedEngine, ALocalRanksCopiesGoToTheThreadThatOwnsItsGpu) {
  Record r;
  auto engine = threaded(r, 2);
  ASSERT_NE(engine, nullptr);
  std::vector<std::byte> bytes(4);
  CollectiveCall call;
  for (call.local = 0; call.local < 4; ++call.local)
    ASSERT_TRUE(engine->copy_in(call, Engine::Region::kInput, 0, bytes).ok());
  EXPECT_EQ(r.copies, (std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  call.local = 4;
  EXPECT_FALSE(engine->copy_in(call, Engine::Region::kInput, 0, bytes).ok());
}

TEST(ThreadedEngine, TheRunsAbortOrderReachesEveryThreadsEngine) {
  Record r;
  AbortRequest request;
  // A collective that never completes: two threads take part in one that waits for three.
  std::vector<EngineMaker> makers;
  for (int t = 0; t < 2; ++t) {
    makers.push_back([&r, t]() -> Result<std::unique_ptr<Engine>> {
      return std::unique_ptr<Engine>(std::make_unique<ThreadStandIn>(r, t, 3, false));
    });
  }
  auto made = make_threaded_engine(std::move(makers));
  ASSERT_TRUE(made.ok());
  std::unique_ptr<Engine> engine = std::move(*made);
  engine->poll_aborts(&request);
  std::thread watchdog([&] {
    for (;;) {
      {
        std::lock_guard lock(r.mutex);
        if (r.inside == 2) break;
      }
      std::this_thread::sleep_for(1ms);
    }
    request.post(5, "watchdog: rank 4 is behind");
  });
  Result<void> ran = engine->run_once(CollectiveCall{});
  watchdog.join();
  ASSERT_FALSE(ran.ok());
  EXPECT_NE(ran.error().message().find("aborted: watchdog: rank 4 is behind"), std::string::npos)
      << ran.error().message();
}

TEST(ThreadedEngine, OneThreadsFailureEndsTheOthersWaitAndIsTheOneReported) {
  Record r;
  auto engine = threaded(r, 3, /*failing=*/1);
  ASSERT_NE(engine, nullptr);
  Result<void> ran = engine->run_once(CollectiveCall{});
  ASSERT_FALSE(ran.ok());
  EXPECT_NE(ran.error().message().find("engine 1 broke"), std::string::npos)
      << ran.error().message();
}

TEST(ThreadedEngine, AnEngineThatCannotBeMadeIsReported) {
  std::vector<EngineMaker> makers;
  makers.push_back([]() -> Result<std::unique_ptr<Engine>> {
    return Error(ErrorCode::kSystem, "cudaSetDevice", "invalid device ordinal");
  });
  auto made = make_threaded_engine(std::move(makers));
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message().find("invalid device ordinal"), std::string::npos);
}

} // namespace
} // namespace fabric::nccltest
