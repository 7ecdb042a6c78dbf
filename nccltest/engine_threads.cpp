#include "nccltest/engine_threads.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "nccltest/abort_request.h"

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;

// How often the waiting thread looks at the run's abort order and at failed threads.
constexpr auto kWorkersPoll = 20ms;

// One thread and the engine it owns, serving one task at a time.
class EngineThread {
public:
  using Task = std::function<Result<void>(Engine&)>;

  explicit EngineThread(EngineMaker make) : thread_([this, m = std::move(make)] { serve(m); }) {}

  ~EngineThread() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  // The engine made on the thread, once it is (its error when it could not be).
  Result<void> made() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return made_.has_value(); });
    return *made_;
  }

  void start(Task task) {
    {
      std::lock_guard lock(mutex_);
      task_ = std::move(task);
      result_.reset();
    }
    wake_.notify_all();
  }

  // The task's result once it finished, or nullopt while it runs.
  std::optional<Result<void>> finished() {
    std::lock_guard lock(mutex_);
    return result_;
  }

  // Waits at most `timeout` for the task; the caller has its own bookkeeping to do between.
  void wait_a_while(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    done_.wait_for(lock, timeout, [this] { return result_.has_value(); });
  }

  // A task that makes the thread's next engine from its current one (NCCL_TESTS_SPLIT's
  // sub-communicators); the current one is destroyed on the thread, replaced when the
  // task gives an engine and kept when it gives none.
  using Replacement = std::function<Result<std::unique_ptr<Engine>>(Engine&)>;
  void start_replacing(Replacement make) {
    start([this, make = std::move(make)](Engine& current) -> Result<void> {
      FABRIC_ASSIGN_OR_RETURN(std::unique_ptr<Engine> next, make(current));
      if (next != nullptr) engine_ = std::move(next); // serve() runs tasks on this thread
      return Ok();
    });
  }

  Engine& engine() { return *engine_; } // for what reads no device state

private:
  void serve(const EngineMaker& make) {
    Result<std::unique_ptr<Engine>> made = make();
    {
      std::lock_guard lock(mutex_);
      if (made.ok()) {
        engine_ = std::move(*made);
        made_ = Result<void>();
      } else {
        made_ = Result<void>(std::move(made).error());
      }
    }
    done_.notify_all();
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || task_ != nullptr; });
        if (task_ == nullptr) break;
        task = std::move(task_);
        task_ = nullptr;
      }
      Result<void> r = engine_ ? task(*engine_)
                               : Result<void>(Error(ErrorCode::kInternal, "an engine thread",
                                                    "its engine could not be made"));
      {
        std::lock_guard lock(mutex_);
        result_ = std::move(r);
      }
      done_.notify_all();
    }
    engine_.reset(); // destroyed by the thread that owns it
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  Task task_;
  std::optional<Result<void>> made_;
  std::optional<Result<void>> result_;
  bool stopping_ = false;
  std::unique_ptr<Engine> engine_;
  std::thread thread_; // last: starts once every member above exists
};

class ThreadedEngine final : public Engine {
public:
  explicit ThreadedEngine(std::vector<EngineMaker> makers) {
    for (EngineMaker& m : makers)
      threads_.push_back(std::make_unique<EngineThread>(std::move(m)));
  }
  explicit ThreadedEngine(std::vector<std::unique_ptr<EngineThread>> threads)
      : threads_(std::move(threads)) {}

  Result<void> init() {
    for (auto& t : threads_)
      FABRIC_TRY(t->made());
    per_thread_ = threads_.front()->engine().local_ranks();
    rank_ = threads_.front()->engine().rank();
    size_ = threads_.front()->engine().size();
    // Each thread's engine polls this process's own order, which carries the run's and
    // a sibling thread's failure (see wait_all).
    return on_all([this](Engine& e, std::size_t) {
      e.poll_aborts(&inner_);
      return Result<void>();
    });
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_ranks() const override { return per_thread_ * static_cast<int>(threads_.size()); }

  Result<void> allocate(std::size_t send_bytes, std::size_t recv_bytes) override {
    return on_all([&](Engine& e, std::size_t) { return e.allocate(send_bytes, recv_bytes); });
  }

  // The process's time is its slowest thread's, and so is each iteration's (-I 1), as
  // nccl-tests' GatherProcessMaxIterTimes takes the maximum over a process's threads.
  Result<double> timed_run(const CollectiveCall& call, const TimingOptions& timing) override {
    std::vector<double> seconds(threads_.size(), 0.0);
    std::vector<std::vector<double>> iterations(threads_.size());
    FABRIC_TRY(on_all([&](Engine& e, std::size_t t) -> Result<void> {
      TimingOptions own = timing;
      if (timing.iteration_seconds != nullptr) own.iteration_seconds = &iterations[t];
      FABRIC_ASSIGN_OR_RETURN(seconds[t], e.timed_run(call, own));
      return Ok();
    }));
    if (timing.iteration_seconds != nullptr) {
      std::vector<double>& slowest = *timing.iteration_seconds;
      slowest.assign(iterations.front().size(), 0.0);
      for (const std::vector<double>& thread : iterations) {
        for (std::size_t i = 0; i < thread.size() && i < slowest.size(); ++i)
          slowest[i] = std::max(slowest[i], thread[i]);
      }
    }
    double slowest = 0;
    for (double s : seconds)
      slowest = std::max(slowest, s);
    return slowest;
  }

  Result<void> run_once(const CollectiveCall& call) override {
    return on_all([&](Engine& e, std::size_t) { return e.run_once(call); });
  }

  Result<void> copy_in(const CollectiveCall& call, Region region, std::size_t offset,
                       std::span<const std::byte> bytes) override {
    return on_owner(call, [&](Engine& e, const CollectiveCall& c) {
      return e.copy_in(c, region, offset, bytes);
    });
  }

  Result<void> copy_out(const CollectiveCall& call, Region region, std::size_t offset,
                        std::span<std::byte> bytes) override {
    return on_owner(call, [&](Engine& e, const CollectiveCall& c) {
      return e.copy_out(c, region, offset, bytes);
    });
  }

  bool has_device_checks() const override {
    for (const auto& t : threads_)
      if (!t->engine().has_device_checks()) return false;
    return true;
  }

  Result<void> fill_on_device(const CollectiveCall& call, const CheckSpec& spec,
                              const OnLaunch& on_launch) override {
    return on_owner(call, [&](Engine& e, const CollectiveCall& c) {
      return e.fill_on_device(c, spec, on_launch);
    });
  }

  Result<CheckOutcome> verify_on_device(const CollectiveCall& call, const CheckSpec& spec,
                                        const OnLaunch& on_launch) override {
    CheckOutcome outcome;
    FABRIC_TRY(on_owner(call, [&](Engine& e, const CollectiveCall& c) -> Result<void> {
      FABRIC_ASSIGN_OR_RETURN(outcome, e.verify_on_device(c, spec, on_launch));
      return Ok();
    }));
    return outcome;
  }

  Result<std::vector<std::int64_t>> free_device_memory() override {
    std::vector<std::vector<std::int64_t>> each(threads_.size());
    FABRIC_TRY(on_all([&](Engine& e, std::size_t t) -> Result<void> {
      FABRIC_ASSIGN_OR_RETURN(each[t], e.free_device_memory());
      return Ok();
    }));
    std::vector<std::int64_t> out;
    for (const std::vector<std::int64_t>& thread : each)
      out.insert(out.end(), thread.begin(), thread.end());
    return out;
  }

  // Each thread splits its own communicators (thread t's keys follow key x threads + t,
  // so the groups' ranks keep nccl-tests' numbering); the threads then move, with their
  // new engines, to the engine returned, and this one is left without threads.
  Result<std::unique_ptr<Engine>> split(int color, int key) override {
    const int threads = static_cast<int>(threads_.size());
    for (std::size_t t = 0; t < threads_.size(); ++t) {
      threads_[t]->start_replacing([color, key, threads, t](Engine& e) {
        return e.split(color, key * threads + static_cast<int>(t));
      });
    }
    FABRIC_TRY(wait_all());
    if (color < 0) return std::unique_ptr<Engine>();
    auto engine = std::make_unique<ThreadedEngine>(std::move(threads_));
    threads_.clear();
    FABRIC_TRY(engine->init());
    engine->poll_aborts(outer_);
    return std::unique_ptr<Engine>(std::move(engine));
  }

  void poll_aborts(const AbortRequest* request) override { outer_ = request; }

private:
  using Each = std::function<Result<void>(Engine&, std::size_t)>;

  // `each` on every thread at once (the threads' collectives need each other), waited for.
  Result<void> on_all(const Each& each) {
    for (std::size_t t = 0; t < threads_.size(); ++t) {
      threads_[t]->start([&each, t](Engine& e) { return each(e, t); });
    }
    return wait_all();
  }

  // One local rank's task, on the thread that owns its GPU, with the thread's own index.
  Result<void> on_owner(const CollectiveCall& call,
                        const std::function<Result<void>(Engine&, const CollectiveCall&)>& fn) {
    if (call.local < 0 || call.local >= local_ranks()) {
      return Error(ErrorCode::kInvalidArgument, "the threaded engine",
                   "local rank " + std::to_string(call.local) + " of " +
                       std::to_string(local_ranks()));
    }
    const auto t = static_cast<std::size_t>(call.local / per_thread_);
    CollectiveCall mine = call;
    mine.local = call.local % per_thread_;
    threads_[t]->start([&fn, mine](Engine& e) { return fn(e, mine); });
    return wait_one(t);
  }

  // Forwards the run's order to the threads' engines; they abort their own communicators.
  void forward_abort() {
    if (outer_ != nullptr && outer_->requested() && !inner_.requested())
      inner_.post(outer_->exit_code(), outer_->reason());
  }

  Result<void> wait_one(std::size_t t) {
    for (;;) {
      if (auto r = threads_[t]->finished()) return *r;
      forward_abort();
      threads_[t]->wait_a_while(kWorkersPoll);
    }
  }

  // Every thread's task finished. The first failure is the run's: the other threads are
  // told to abort (they may be waiting for the failed thread's ranks) and their errors,
  // which follow from it, are not reported.
  Result<void> wait_all() {
    std::optional<Error> first;
    std::size_t pending = threads_.size();
    std::vector<bool> seen(threads_.size(), false);
    while (pending > 0) {
      for (std::size_t t = 0; t < threads_.size(); ++t) {
        if (seen[t]) continue;
        std::optional<Result<void>> r = threads_[t]->finished();
        if (!r) continue;
        seen[t] = true;
        --pending;
        if (!r->ok() && !first) {
          first = r->error();
          inner_.post(kExitAfterSibling, "thread " + std::to_string(t) +
                                             " of this process failed: " + first->message());
        }
      }
      forward_abort();
      for (std::size_t t = 0; t < threads_.size() && pending > 0; ++t) {
        if (!seen[t]) {
          threads_[t]->wait_a_while(kWorkersPoll);
          break;
        }
      }
    }
    if (first) return *first;
    return Ok();
  }

  static constexpr int kExitAfterSibling = 2; // a system error, as the failure that caused it

  std::vector<std::unique_ptr<EngineThread>> threads_;
  AbortRequest inner_;
  const AbortRequest* outer_ = nullptr;
  int per_thread_ = 1, rank_ = 0, size_ = 0;
};

} // namespace

Result<std::unique_ptr<Engine>> make_threaded_engine(std::vector<EngineMaker> makers) {
  if (makers.empty()) {
    return Error(ErrorCode::kInternal, "the threaded engine", "no thread to start");
  }
  auto engine = std::make_unique<ThreadedEngine>(std::move(makers));
  FABRIC_TRY(engine->init());
  return std::unique_ptr<Engine>(std::move(engine));
}

} // namespace fabric::nccltest
