// The nccl engine: one communicator on one GPU, its own stream, device buffers, and CUDA
// events around the timed loop (or around the launches of a CUDA graph that captured it).
// Waits poll the stream, NCCL's asynchronous error and the run's abort request, so a failed
// peer or the watchdog ends them instead of a hang. Only the thread that owns the engine
// calls into NCCL: an abort posted by another thread is carried out here, in wait(), and
// after ncclCommAbort the communicator is never touched again (abort_request.h).
#include "nccltest/engine_nccl.h"

#include <array>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "nccltest/abort_request.h"
#include "nccltest/check_kernels.h"
#include "nccltest/check_values.h"
#include "nccltest/nccl_api.h"

namespace fabric::nccltest::nccl {
namespace {

class NcclEngine final : public Engine {
public:
  NcclEngine(const Api& api, ncclComm_t comm, int device, int rank, int size)
      : api_(api), comm_(comm), device_(device), rank_(rank), size_(size) {}

  ~NcclEngine() override {
    api_.set_device(device_);
    if (graph_exec_ != nullptr) api_.graph_exec_destroy(graph_exec_);
    if (start_ != nullptr) api_.event_destroy(start_);
    if (stop_ != nullptr) api_.event_destroy(stop_);
    if (send_ != nullptr) api_.free(send_);
    if (recv_ != nullptr) api_.free(recv_);
    if (flag_ != nullptr) api_.free(flag_);
    if (check_result_ != nullptr) api_.free(check_result_);
    kernels_.reset();
    if (stream_ != nullptr) api_.stream_destroy(stream_);
    if (!aborted_) api_.comm_destroy(comm_);
  }

  Result<void> init() {
    FABRIC_TRY(check(api_, api_.set_device(device_), "cudaSetDevice"));
    FABRIC_TRY(check(api_, api_.stream_create_with_flags(&stream_, cudaStreamNonBlocking),
                     "cudaStreamCreateWithFlags"));
    FABRIC_TRY(check(api_, api_.event_create(&start_), "cudaEventCreate"));
    FABRIC_TRY(check(api_, api_.event_create(&stop_), "cudaEventCreate"));
    FABRIC_TRY(check(api_, api_.malloc(&flag_, sizeof(int)), "cudaMalloc"));
    // The device checks need the kernels and a driver that loads them for this GPU; else
    // the checks run on the host, slower, and the log says why once.
    Result<std::unique_ptr<CheckKernels>> kernels = CheckKernels::load();
    if (kernels.ok()) {
      FABRIC_TRY(
          check(api_, api_.malloc(&check_result_, 2 * sizeof(unsigned long long)), "cudaMalloc"));
      kernels_ = std::move(*kernels);
    } else {
      static std::once_flag said;
      std::call_once(said, [&] {
        spdlog::warn("data checks run on the host, in chunks: {}", kernels.error().message());
      });
    }
    return Ok();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Result<void> allocate(std::size_t send_bytes, std::size_t recv_bytes) override {
    FABRIC_TRY(check(api_, api_.set_device(device_), "cudaSetDevice"));
    FABRIC_TRY(
        check(api_, api_.malloc(&send_, std::max<std::size_t>(send_bytes, 1)), "cudaMalloc"));
    FABRIC_TRY(
        check(api_, api_.malloc(&recv_, std::max<std::size_t>(recv_bytes, 1)), "cudaMalloc"));
    send_bytes_ = send_bytes;
    recv_bytes_ = recv_bytes;
    return Ok();
  }

  Result<double> timed_run(const CollectiveCall& call, const TimingOptions& timing) override {
    FABRIC_TRY(run_once(call));
    // As nccl-tests: capture and instantiate before the barrier, so that one rank's slow
    // instantiation is not in the others' time.
    if (timing.graph_launches > 0) FABRIC_TRY(capture(call, timing));
    FABRIC_TRY(barrier());
    const long ops = static_cast<long>(timing.iters) * timing.agg_iters;
    const double launches = timing.graph_launches > 0 ? timing.graph_launches : 1;
    // -C: the host's time to issue the operations (nccl-tests' cputime), before the wait.
    double host_seconds = 0;
    if (timing.blocking == 3 && timing.graph_launches == 0) {
      FABRIC_ASSIGN_OR_RETURN(double seconds, iteration_seconds(call, timing, host_seconds));
      return (timing.report_cputime ? host_seconds : seconds) / static_cast<double>(ops);
    }
    const auto host_start = std::chrono::steady_clock::now();
    if (timing.graph_launches > 0) {
      FABRIC_TRY(check(api_, api_.event_record(start_, stream_), "cudaEventRecord"));
      for (int l = 0; l < timing.graph_launches; ++l) {
        FABRIC_TRY(check(api_, api_.graph_launch(graph_exec_, stream_), "cudaGraphLaunch"));
      }
    } else {
      FABRIC_TRY(check(api_, api_.event_record(start_, stream_), "cudaEventRecord"));
      FABRIC_TRY(iterations(call, timing));
    }
    host_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
    FABRIC_TRY(check(api_, api_.event_record(stop_, stream_), "cudaEventRecord"));
    FABRIC_TRY(wait());
    if (timing.report_cputime) {
      return host_seconds / (static_cast<double>(ops) * launches);
    }
    float ms = 0;
    FABRIC_TRY(check(api_, api_.event_elapsed_time(&ms, start_, stop_), "cudaEventElapsedTime"));
    return static_cast<double>(ms) / 1e3 / (static_cast<double>(ops) * launches);
  }

  Result<void> run_once(const CollectiveCall& call) override {
    FABRIC_TRY(launch(call));
    return wait();
  }

  // On the engine's stream, then waited for: ordered after the collective that wrote the
  // output and before the next one that reads the input.
  Result<void> copy_in(const CollectiveCall& call, Region region, std::size_t offset,
                       std::span<const std::byte> bytes) override {
    FABRIC_ASSIGN_OR_RETURN(char* device, region_at(call, region, offset, bytes.size()));
    FABRIC_TRY(check(
        api_,
        api_.memcpy_async(device, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync to the GPU"));
    return wait();
  }

  Result<void> copy_out(const CollectiveCall& call, Region region, std::size_t offset,
                        std::span<std::byte> bytes) override {
    FABRIC_ASSIGN_OR_RETURN(char* device, region_at(call, region, offset, bytes.size()));
    FABRIC_TRY(check(
        api_,
        api_.memcpy_async(bytes.data(), device, bytes.size(), cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync from the GPU"));
    return wait();
  }

  bool has_device_checks() const override { return kernels_ != nullptr; }

  Result<void> fill_on_device(const CollectiveCall& call, const CheckSpec& spec,
                              const OnLaunch& on_launch) override {
    FABRIC_ASSIGN_OR_RETURN(char* input,
                            region_at(call, Region::kInput, 0, call.counts.send * elt(call)));
    const check_math::Params params = make_params(spec);
    for (const CheckLaunch& launch : plan_check_launches(call.counts.send)) {
      FABRIC_TRY(kernels_->fill(params, call.type, input, launch, stream_));
      FABRIC_TRY(wait());
      if (on_launch) on_launch();
    }
    return Ok();
  }

  // The kernels count wrong elements into two integers on the GPU; only those, and the
  // first wrong element when there is one, come back to the host.
  Result<CheckOutcome> verify_on_device(const CollectiveCall& call, const CheckSpec& spec,
                                        const OnLaunch& on_launch) override {
    CheckOutcome outcome;
    const check_math::Params params = make_params(spec);
    if (!check_math::output_defined(params)) return outcome;
    FABRIC_ASSIGN_OR_RETURN(char* output,
                            region_at(call, Region::kOutput, 0, call.counts.recv * elt(call)));
    unsigned long long result[2] = {0, ~0ull};
    FABRIC_TRY(check(
        api_,
        api_.memcpy_async(check_result_, result, sizeof result, cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync to the GPU"));
    for (const CheckLaunch& launch : plan_check_launches(call.counts.recv)) {
      FABRIC_TRY(kernels_->verify(params, call.type, output, launch,
                                  static_cast<unsigned long long*>(check_result_), stream_));
      FABRIC_TRY(wait());
      if (on_launch) on_launch();
    }
    FABRIC_TRY(check(
        api_,
        api_.memcpy_async(result, check_result_, sizeof result, cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync from the GPU"));
    FABRIC_TRY(wait());
    outcome.checked = call.counts.recv;
    outcome.wrong = static_cast<std::size_t>(result[0]);
    if (outcome.wrong > 0) {
      std::vector<std::byte> element(elt(call));
      outcome.first_index = static_cast<std::size_t>(result[1]);
      FABRIC_TRY(copy_out(call, Region::kOutput, outcome.first_index * elt(call), element));
      outcome.first_got = stored_value(call.type, element);
      outcome.first_expected = expected_output(spec, outcome.first_index);
    }
    return outcome;
  }

  Result<std::unique_ptr<Engine>> split(int color, int key) override {
    FABRIC_TRY(usable());
    int version = 0;
    if (api_.comm_split == nullptr && api_.get_version != nullptr) api_.get_version(&version);
    FABRIC_TRY(check_split(api_, version));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    ncclComm_t sub = nullptr;
    FABRIC_TRY(check(
        api_, api_.comm_split(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, &config),
        "ncclCommSplit", comm_));
    if (sub == nullptr) return std::unique_ptr<Engine>();
    FABRIC_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, make_nccl_engine(api_, sub, device_));
    engine->poll_aborts(abort_request_);
    FABRIC_TRY(engine->allocate(send_bytes_, recv_bytes_));
    return engine;
  }

  void poll_aborts(const AbortRequest* request) override { abort_request_ = request; }

private:
  // After ncclCommAbort nothing may touch the communicator again.
  Result<void> usable() const {
    if (!aborted_) return Ok();
    return Error(ErrorCode::kSystem, "the collective", "the communicator was aborted");
  }

  static std::size_t elt(const CollectiveCall& call) { return data_type_size(call.type); }

  // Where `length` bytes of a region of `call` start on the GPU, `offset` bytes in.
  Result<char*> region_at(const CollectiveCall& call, Region region, std::size_t offset,
                          std::size_t length) const {
    const std::size_t elt = data_type_size(call.type);
    char* recv = static_cast<char*>(recv_);
    char* base = nullptr;
    std::size_t size = 0;
    if (region == Region::kInput) {
      base =
          call.in_place ? recv + call.counts.send_inplace * rank_ * elt : static_cast<char*>(send_);
      size = call.counts.send * elt;
    } else {
      base = recv + (call.in_place ? call.counts.recv_inplace * rank_ * elt : 0);
      size = call.counts.recv * elt;
    }
    base += call.unalign * elt;
    if (offset > size || length > size - offset) {
      return Error(ErrorCode::kInvalidArgument, "copying a check's data",
                   "beyond the collective's buffer");
    }
    return base + offset;
  }

  // One operation of `call` on the stream, not waited for. mulsum's operation is made for
  // the call and destroyed after it, as nccl-tests' startColl does.
  // `shift`: where this operation starts in the buffers (rotation_offset).
  Result<void> launch(const CollectiveCall& call, std::size_t shift = 0) {
    FABRIC_TRY(usable());
    const ncclDataType_t type = nccl_type(call.type);
    if (call.op == ReduceOp::kMulSum && uses_op(call.collective)) {
      if (api_.red_op_create_pre_mul_sum == nullptr || api_.red_op_destroy == nullptr) {
        return Error(ErrorCode::kUnsupported, "-o mulsum",
                     "needs ncclRedOpCreatePreMulSum, which this NCCL lacks (NCCL 2.11 added it)");
      }
      std::array<std::byte, 8> scalar =
          stored_bytes(call.type, static_cast<double>(check_math::premul_scalar(rank_)));
      ncclRedOp_t op{};
      FABRIC_TRY(check(
          api_,
          api_.red_op_create_pre_mul_sum(&op, scalar.data(), type, ncclScalarHostImmediate, comm_),
          "ncclRedOpCreatePreMulSum", comm_));
      Result<void> launched = launch_with(call, shift, type, op);
      FABRIC_TRY(check(api_, api_.red_op_destroy(op, comm_), "ncclRedOpDestroy", comm_));
      return launched;
    }
    return launch_with(call, shift, type, nccl_op(call.op));
  }

  Result<void> launch_with(const CollectiveCall& call, std::size_t shift, ncclDataType_t type,
                           ncclRedOp_t op) {
    const std::size_t elt = data_type_size(call.type);
    const std::size_t count = call.counts.param;
    char* recv = static_cast<char*>(recv_) + shift + call.unalign * elt;
    const char* send = call.in_place ? recv + call.counts.send_inplace * rank_ * elt
                                     : static_cast<const char*>(send_) + shift + call.unalign * elt;
    char* out = recv + (call.in_place ? call.counts.recv_inplace * rank_ * elt : 0);
    ncclResult_t rc = ncclSuccess;
    switch (call.collective) {
    case Collective::kAllReduce:
      rc = api_.all_reduce(send, out, count, type, op, comm_, stream_);
      break;
    case Collective::kAllGather:
      rc = api_.all_gather(send, out, count, type, comm_, stream_);
      break;
    case Collective::kReduceScatter:
      rc = api_.reduce_scatter(send, out, count, type, op, comm_, stream_);
      break;
    case Collective::kBroadcast:
      rc = api_.broadcast(send, out, count, type, call.root, comm_, stream_);
      break;
    case Collective::kReduce:
      rc = api_.reduce(send, out, count, type, op, call.root, comm_, stream_);
      break;
    case Collective::kAllToAll:
      if (api_.all_to_all != nullptr) {
        rc = api_.all_to_all(send, out, count, type, comm_, stream_);
        break;
      }
      FABRIC_TRY(check(api_, api_.group_start(), "ncclGroupStart", comm_));
      for (int r = 0; r < size_ && rc == ncclSuccess; ++r) {
        rc = api_.send(send + r * count * elt, count, type, r, comm_, stream_);
        if (rc == ncclSuccess)
          rc = api_.recv(out + r * count * elt, count, type, r, comm_, stream_);
      }
      FABRIC_TRY(check(api_, api_.group_end(), "ncclGroupEnd", comm_));
      break;
    case Collective::kSendRecv: {
      FABRIC_TRY(check(api_, api_.group_start(), "ncclGroupStart", comm_));
      rc = api_.send(send, count, type, (rank_ + 1) % size_, comm_, stream_);
      if (rc == ncclSuccess)
        rc = api_.recv(out, count, type, (rank_ - 1 + size_) % size_, comm_, stream_);
      FABRIC_TRY(check(api_, api_.group_end(), "ncclGroupEnd", comm_));
      break;
    }
    }
    return check(api_, rc, "launching the collective", comm_);
  }

  // The timed operations, aggregated per iteration as nccl-tests' -m does, each at its
  // rotation offset. Blocking (-z 1 and 2), each operation is waited for (and, -z 1,
  // followed by a barrier), as nccl-tests' startColl does; no group then (a wait inside one
  // would wait for nothing, the group not yet launched). -z 3 is timed_run's.
  Result<void> iterations(const CollectiveCall& call, const TimingOptions& timing, int first = 0,
                          int count = -1) {
    const int end = count < 0 ? timing.iters : first + count;
    for (int i = first; i < end; ++i) {
      const long op0 = static_cast<long>(i) * timing.agg_iters;
      if (timing.blocking == 1 || timing.blocking == 2) {
        for (int a = 0; a < timing.agg_iters; ++a) {
          FABRIC_TRY(launch(call, rotation_offset(call, timing.rotate_bytes, op0 + a)));
          FABRIC_TRY(wait());
          if (timing.blocking == 1) FABRIC_TRY(barrier());
        }
        continue;
      }
      if (timing.agg_iters > 1)
        FABRIC_TRY(check(api_, api_.group_start(), "ncclGroupStart", comm_));
      for (int a = 0; a < timing.agg_iters; ++a)
        FABRIC_TRY(launch(call, rotation_offset(call, timing.rotate_bytes, op0 + a)));
      if (timing.agg_iters > 1) FABRIC_TRY(check(api_, api_.group_end(), "ncclGroupEnd", comm_));
    }
    return Ok();
  }

  // -z 3: each iteration timed on its own and waited for, then a barrier outside the time.
  Result<double> iteration_seconds(const CollectiveCall& call, const TimingOptions& timing,
                                   double& host_seconds) {
    double seconds = 0;
    for (int i = 0; i < timing.iters; ++i) {
      const auto host_start = std::chrono::steady_clock::now();
      FABRIC_TRY(check(api_, api_.event_record(start_, stream_), "cudaEventRecord"));
      FABRIC_TRY(iterations(call, timing, i, 1));
      FABRIC_TRY(check(api_, api_.event_record(stop_, stream_), "cudaEventRecord"));
      FABRIC_TRY(wait());
      host_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
      float ms = 0;
      FABRIC_TRY(check(api_, api_.event_elapsed_time(&ms, start_, stop_), "cudaEventElapsedTime"));
      seconds += static_cast<double>(ms) / 1e3;
      FABRIC_TRY(barrier());
    }
    return seconds;
  }

  Result<void> capture(const CollectiveCall& call, const TimingOptions& timing) {
    if (graph_exec_ != nullptr) {
      api_.graph_exec_destroy(graph_exec_);
      graph_exec_ = nullptr;
    }
    FABRIC_TRY(check(api_, api_.stream_begin_capture(stream_, cudaStreamCaptureModeThreadLocal),
                     "cudaStreamBeginCapture"));
    TimingOptions captured = timing;
    captured.blocking = 0;
    Result<void> launched = iterations(call, captured);
    cudaGraph_t graph = nullptr;
    FABRIC_TRY(check(api_, api_.stream_end_capture(stream_, &graph), "cudaStreamEndCapture"));
    FABRIC_TRY(launched);
    Result<void> made = check(api_, api_.graph_instantiate_with_flags(&graph_exec_, graph, 0),
                              "cudaGraphInstantiateWithFlags");
    api_.graph_destroy(graph);
    return made;
  }

  // Everything on the stream done; NCCL's asynchronous errors (a dead peer, an abort) end
  // the wait with an error.
  Result<void> wait() {
    FABRIC_TRY(usable());
    for (;;) {
      cudaError_t rc = api_.stream_query(stream_);
      if (rc == cudaSuccess) return Ok();
      if (rc != cudaErrorNotReady) return check(api_, rc, "cudaStreamQuery");
      ncclResult_t async = ncclSuccess;
      FABRIC_TRY(
          check(api_, api_.comm_get_async_error(comm_, &async), "ncclCommGetAsyncError", comm_));
      if (async != ncclSuccess) {
        Error error = check(api_, async, "the collective (asynchronous error)", comm_).error();
        abort_comm();
        return error;
      }
      if (abort_request_ != nullptr && abort_request_->requested()) {
        abort_comm();
        return Error(ErrorCode::kSystem, "the collective",
                     "aborted (ncclCommAbort): " + abort_request_->reason());
      }
      std::this_thread::yield();
    }
  }

  // As nccl-tests does on an asynchronous error or a timeout: the communicator's pending
  // operations are stopped, and it is never used (nor destroyed) again.
  void abort_comm() {
    if (aborted_) return;
    aborted_ = true;
    api_.comm_abort(comm_);
  }

  // All ranks of this communicator at the same point: a one-element all-reduce.
  Result<void> barrier() {
    FABRIC_TRY(usable());
    FABRIC_TRY(check(api_, api_.all_reduce(flag_, flag_, 1, ncclInt32, ncclSum, comm_, stream_),
                     "ncclAllReduce (barrier)", comm_));
    return wait();
  }

  const Api& api_;
  ncclComm_t comm_;
  int device_, rank_, size_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  void* flag_ = nullptr;
  void* check_result_ = nullptr; // the device checks' two counters
  std::unique_ptr<CheckKernels> kernels_;
  std::size_t send_bytes_ = 0, recv_bytes_ = 0;
  const AbortRequest* abort_request_ = nullptr;
  bool aborted_ = false; // ncclCommAbort was called: the communicator is gone
};

} // namespace

Result<std::unique_ptr<Engine>> make_nccl_engine(const Api& api, ncclComm_t comm, int device) {
  int rank = 0, size = 0;
  FABRIC_TRY(check(api, api.comm_user_rank(comm, &rank), "ncclCommUserRank", comm));
  FABRIC_TRY(check(api, api.comm_count(comm, &size), "ncclCommCount", comm));
  auto engine = std::make_unique<NcclEngine>(api, comm, device, rank, size);
  FABRIC_TRY(engine->init());
  return std::unique_ptr<Engine>(std::move(engine));
}

} // namespace fabric::nccltest::nccl
