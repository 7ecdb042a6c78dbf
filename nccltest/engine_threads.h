// nccl-tests' -t: several threads per process, each driving its own GPUs with its own
// engine, every operation launched by every thread at once (nccl-tests' threadRunTests).
// Each engine is made, used and destroyed on its own thread: that thread owns its
// communicators, polls the abort order in its waits and calls ncclCommAbort itself, so no
// communicator is ever touched by two threads (abort_request.h). The calling thread only
// hands out the work and waits; while it waits it forwards the run's abort order, and a
// failure on one thread aborts the others rather than leave them waiting for it.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "nccltest/engine.h"

namespace fabric::nccltest {

// Makes one thread's engine; called on that thread.
using EngineMaker = std::function<Result<std::unique_ptr<Engine>>()>;

// One thread per maker, in rank order: thread t's engine drives local ranks
// t * its local_ranks() and on (every thread drives as many, nccl-tests' -g).
Result<std::unique_ptr<Engine>> make_threaded_engine(std::vector<EngineMaker> makers);

} // namespace fabric::nccltest
