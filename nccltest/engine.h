// The collective engine behind one small interface: MPI's collectives on host memory, or
// NCCL's on GPU memory. An engine owns one communicator and its buffers; the timed loop
// lives inside the engine, so a run costs no virtual call, allocation or log line per
// operation, exactly like a bare loop of the same collective.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "nccltest/check_values.h"
#include "nccltest/collectives.h"

namespace fabric::nccltest {

class AbortRequest;

struct CollectiveCall {
  Collective collective = Collective::kAllReduce;
  DataType type = DataType::kFloat;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  CollectiveCounts counts;
  bool in_place = false;
  // Which of the engine's local ranks (local_ranks()) a copy, fill or verify addresses;
  // operations themselves always run on all of them.
  int local = 0;
  std::size_t unalign = 0; // -u: both buffers start this many elements in
};

// Where operation `op` of a timed loop starts in the buffers, as nccl-tests' startColl
// rotates it to avoid cache effects: whole message slots of the -e size, in turn. 0 when
// `rotate_bytes` (the -e size) holds one message only.
inline std::size_t rotation_offset(const CollectiveCall& call, std::size_t rotate_bytes, long op) {
  const std::size_t total = call.counts.printed_bytes(data_type_size(call.type));
  const std::size_t steps = total > 0 ? rotate_bytes / total : 1;
  return steps > 1 ? total * (static_cast<std::size_t>(op) % steps) : 0;
}

struct TimingOptions {
  int iters = 1;
  int agg_iters = 1;      // operations per iteration
  int graph_launches = 0; // nccl: capture the iterations in a CUDA graph, launch it this often
  // -z: 1 wait and barrier after each operation, 2 wait after each, 3 wait and barrier
  // after each iteration with the barrier left out of the time.
  int blocking = 0;
  bool report_cputime = false;  // -C: the host's time to issue the operations
  std::size_t rotate_bytes = 0; // the -e size: operations rotate through its slots
  // -I 1: when set, timed_run replaces its content with each iteration's seconds per
  // operation (the slowest local rank's), one per iteration, as nccl-tests' CUDA events
  // time them. At most kMaxPerIterationIterations (per_iteration.h) iterations.
  std::vector<double>* iteration_seconds = nullptr;
  // Test-only fault injection: a pause added to every operation (a slow link).
  std::chrono::microseconds injected_delay{0};
};

// Host memory a check stages at once, per rank: an 8 GiB buffer is checked 64 MiB at a time.
inline constexpr std::size_t kCheckChunkBytes = std::size_t{64} << 20;

class Engine {
public:
  virtual ~Engine() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The ranks this engine drives: rank() to rank() + local_ranks() - 1, one per GPU of the
  // process (nccl-tests' -g and -t); 1 for the mpi backend.
  virtual int local_ranks() const { return 1; }

  // Send and receive buffers for every size of the run; once, before any timing.
  virtual Result<void> allocate(std::size_t send_bytes, std::size_t recv_bytes) = 0;
  // One untimed operation, then a barrier, then `timing.iters` timed iterations. Returns
  // this process's seconds per operation (the slowest of its local ranks).
  virtual Result<double> timed_run(const CollectiveCall& call, const TimingOptions& timing) = 0;
  // One operation, complete when this returns (for warm-up and checks).
  virtual Result<void> run_once(const CollectiveCall& call) = 0;

  // Copies between host memory and this rank's data of `call`: its input (the send buffer,
  // or its place in the receive buffer in place) or its output, starting `offset` bytes in.
  // Complete, and ordered after everything the engine ran before, when this returns. The
  // checks call these in chunks of at most kCheckChunkBytes (data_check.h).
  enum class Region { kInput, kOutput };
  virtual Result<void> copy_in(const CollectiveCall& call, Region region, std::size_t offset,
                               std::span<const std::byte> bytes) = 0;
  virtual Result<void> copy_out(const CollectiveCall& call, Region region, std::size_t offset,
                                std::span<std::byte> bytes) = 0;

  // Generates this rank's input and verifies its output where the data lives, without
  // host copies (the nccl backend's kernels, device_checks.h). When has_device_checks() is
  // false the caller checks on the host through copy_in and copy_out.
  // `on_launch` runs after each of the bounded launches (check_plan.h), once it completed.
  using OnLaunch = std::function<void()>;
  virtual bool has_device_checks() const { return false; }
  virtual Result<void> fill_on_device(const CollectiveCall& call, const CheckSpec& spec,
                                      const OnLaunch& on_launch);
  virtual Result<CheckOutcome> verify_on_device(const CollectiveCall& call, const CheckSpec& spec,
                                                const OnLaunch& on_launch);

  // Each of its GPUs' free memory (cudaMemGetInfo), local rank by local rank, for -M's
  // figures; empty where the engine has no device memory (the mpi backend).
  virtual Result<std::vector<std::int64_t>> free_device_memory() {
    return std::vector<std::int64_t>{};
  }

  // A communicator over the processes that pass the same `color`, ordered by `key`; each
  // process's local ranks keep their order (a process's are keys key x local_ranks() and
  // on, as nccl-tests numbers a process's GPUs after MPI_Comm_split). Processes passing a
  // negative colour take no part and get nullptr. Collective over this engine.
  virtual Result<std::unique_ptr<Engine>> split(int color, int key) = 0;

  // Where the engine waits for an operation, it polls `request` (which outlives the
  // engine); once an abort is posted it stops using its communicator for good
  // (ncclCommAbort, from the thread that owns the engine) and fails the operation. Engines
  // made by split() poll the same request. MPI's blocking calls cannot poll: there the
  // poster ends the process (abort_request.h).
  virtual void poll_aborts(const AbortRequest* request) = 0;
};

} // namespace fabric::nccltest
