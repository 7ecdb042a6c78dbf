#include "exporters/collector_worker.h"

#include <condition_variable>
#include <mutex>

namespace fabric::exporters {

struct CollectorWorker::State {
  std::mutex mutex;
  std::condition_variable cv;
  std::unique_ptr<Collector> collector;
  std::size_t max_series = MetricSink::kUnlimited;
  bool stop = false;
  bool busy = false;
  uint64_t requested = 0; // generation of the last start()
  uint64_t finished = 0;  // generation of the last outcome
  CollectionOutcome outcome;
};

CollectorWorker::CollectorWorker(std::unique_ptr<Collector> collector, std::size_t max_series)
    : name_(collector->name()), state_(std::make_shared<State>()) {
  state_->collector = std::move(collector);
  state_->max_series = max_series;
  thread_ = std::thread(run, state_);
}

CollectorWorker::~CollectorWorker() {
  bool busy;
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
    busy = state_->busy;
  }
  state_->cv.notify_all();
  // The state (and the collector in it) is shared with the thread, so a busy one can be
  // left to finish after this object is gone.
  if (busy) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void CollectorWorker::run(std::shared_ptr<State> state) {
  std::unique_lock lock(state->mutex);
  while (true) {
    state->cv.wait(lock, [&] { return state->stop || state->requested > state->finished; });
    if (state->requested <= state->finished) return; // stopped while idle
    const uint64_t generation = state->requested;
    lock.unlock();

    auto begin = std::chrono::steady_clock::now();
    MetricSink sink(state->max_series);
    Result<void> result = state->collector->collect(sink);
    CollectionOutcome outcome;
    outcome.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    outcome.dropped = sink.dropped();
    outcome.errors = sink.error_count();
    outcome.messages = sink.errors();
    if (!result.ok()) {
      outcome.failed = true;
      ++outcome.errors;
      outcome.messages.insert(outcome.messages.begin(), result.error().message());
    }
    outcome.families = sink.take();

    lock.lock();
    state->outcome = std::move(outcome);
    state->finished = generation;
    state->busy = false;
    state->cv.notify_all();
    if (state->stop) return;
  }
}

bool CollectorWorker::start() {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->busy) return false;
    state_->busy = true;
    ++state_->requested;
  }
  state_->cv.notify_all();
  return true;
}

std::optional<CollectionOutcome>
CollectorWorker::wait(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(state_->mutex);
  const uint64_t generation = state_->requested;
  if (!state_->cv.wait_until(lock, deadline, [&] { return state_->finished >= generation; }))
    return std::nullopt;
  return std::move(state_->outcome);
}

} // namespace fabric::exporters
