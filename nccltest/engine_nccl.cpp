// The nccl engine: one communicator per GPU the process drives (one, or nccl-tests' -g N),
// each with its own stream, device buffers and CUDA events around the timed loop (or around
// the launches of a CUDA graph that captured it). With several GPUs every operation is
// launched on all of them inside one NCCL group, as nccl-tests' startColl does. Waits poll
// every stream, NCCL's asynchronous errors and the run's abort request, so a failed peer or
// the watchdog ends them instead of a hang. Only the thread that owns the engine calls into
// NCCL: an abort posted by another thread is carried out here, in wait(), on every
// communicator, and after ncclCommAbort none is touched again (abort_request.h).
#include "nccltest/engine_nccl.h"

#include <algorithm>
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

// One GPU of the engine: its communicator and everything the engine keeps on that device.
struct Slot {
  int device = 0;
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  // -I 1: an event at the start of each timed iteration and one after the last.
  std::vector<cudaEvent_t> marks;
  cudaGraphExec_t graph_exec = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  void* flag = nullptr;
  void* check_result = nullptr; // the device checks' two counters
  void* send_handle = nullptr;  // -R: ncclCommRegister's handle, or the window
  void* recv_handle = nullptr;
  std::unique_ptr<CheckKernels> kernels;
  bool pending = false; // wait(): its stream not yet seen idle
};

class NcclEngine final : public Engine {
public:
  NcclEngine(const Api& api, std::vector<Member> members, const EngineConfig& config)
      : api_(api), config_(config) {
    for (const Member& m : members) {
      Slot s;
      s.comm = m.comm;
      s.device = m.device;
      slots_.push_back(std::move(s));
    }
  }

  ~NcclEngine() override {
    for (Slot& s : slots_) {
      api_.set_device(s.device);
      if (s.graph_exec != nullptr) api_.graph_exec_destroy(s.graph_exec);
      if (s.start != nullptr) api_.event_destroy(s.start);
      if (s.stop != nullptr) api_.event_destroy(s.stop);
      destroy_marks(s);
      if (!aborted_) deregister(s);
      free_buffer(s.send);
      free_buffer(s.recv);
      if (s.flag != nullptr) api_.free(s.flag);
      if (s.check_result != nullptr) api_.free(s.check_result);
      s.kernels.reset();
      if (s.stream != nullptr) api_.stream_destroy(s.stream);
    }
    if (aborted_) return;
    for (Slot& s : slots_)
      api_.comm_destroy(s.comm);
  }

  Result<void> init() {
    if (slots_.empty()) {
      return Error(ErrorCode::kInternal, "the nccl engine", "no communicator to drive");
    }
    FABRIC_TRY(
        check(api_, api_.comm_count(slots_[0].comm, &size_), "ncclCommCount", slots_[0].comm));
    bool kernels_everywhere = true;
    std::string why;
    for (Slot& s : slots_) {
      FABRIC_TRY(check(api_, api_.comm_user_rank(s.comm, &s.rank), "ncclCommUserRank", s.comm));
      FABRIC_TRY(check(api_, api_.set_device(s.device), "cudaSetDevice"));
      // -y 1: CUDA's legacy default stream (nullptr), as nccl-tests' stream_null.
      if (!config_.stream_null) {
        FABRIC_TRY(check(api_, api_.stream_create_with_flags(&s.stream, cudaStreamNonBlocking),
                         "cudaStreamCreateWithFlags"));
      }
      FABRIC_TRY(check(api_, api_.event_create(&s.start), "cudaEventCreate"));
      FABRIC_TRY(check(api_, api_.event_create(&s.stop), "cudaEventCreate"));
      FABRIC_TRY(check(api_, api_.malloc(&s.flag, sizeof(int)), "cudaMalloc"));
      // The device checks need the kernels and a driver that loads them for this GPU (each
      // GPU's context its own module); else every GPU's checks run on the host.
      if (!kernels_everywhere) continue;
      Result<std::unique_ptr<CheckKernels>> kernels = CheckKernels::load();
      if (!kernels.ok()) {
        kernels_everywhere = false;
        why = kernels.error().message();
        continue;
      }
      FABRIC_TRY(
          check(api_, api_.malloc(&s.check_result, 2 * sizeof(unsigned long long)), "cudaMalloc"));
      s.kernels = std::move(*kernels);
    }
    if (!kernels_everywhere) {
      for (Slot& s : slots_) {
        api_.set_device(s.device);
        s.kernels.reset();
      }
      static std::once_flag said;
      std::call_once(said,
                     [&] { spdlog::warn("data checks run on the host, in chunks: {}", why); });
    }
    return Ok();
  }

  int rank() const override { return slots_.front().rank; }
  int size() const override { return size_; }
  int local_ranks() const override { return static_cast<int>(slots_.size()); }

  // nccl-tests allocates with ncclMemAlloc where NCCL has it (its memory is what NVLS and
  // the registration paths expect), and registers after allocating, as -R says.
  Result<void> allocate(std::size_t send_bytes, std::size_t recv_bytes) override {
    for (Slot& s : slots_) {
      FABRIC_TRY(check(api_, api_.set_device(s.device), "cudaSetDevice"));
      FABRIC_TRY(allocate_buffer(&s.send, std::max<std::size_t>(send_bytes, 1)));
      FABRIC_TRY(allocate_buffer(&s.recv, std::max<std::size_t>(recv_bytes, 1)));
    }
    send_bytes_ = send_bytes;
    recv_bytes_ = recv_bytes;
    if (config_.registration == Registration::kNone) return Ok();
    return grouped([this](Slot& s) { return register_buffers(s); });
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
    // -I 1 (never with -G, options.cpp): -z 3's start and stop events already bound each
    // iteration; otherwise an event marks each iteration's start, as nccl-tests records.
    std::vector<double>* per_iteration =
        timing.graph_launches == 0 ? timing.iteration_seconds : nullptr;
    if (per_iteration != nullptr) per_iteration->clear();
    if (timing.blocking == 3 && timing.graph_launches == 0) {
      FABRIC_ASSIGN_OR_RETURN(double seconds,
                              iteration_seconds(call, timing, host_seconds, per_iteration));
      return (timing.report_cputime ? host_seconds : seconds) / static_cast<double>(ops);
    }
    if (per_iteration != nullptr) FABRIC_TRY(create_marks(timing.iters + 1));
    const auto host_start = std::chrono::steady_clock::now();
    FABRIC_TRY(record_all(&Slot::start));
    if (timing.graph_launches > 0) {
      for (int l = 0; l < timing.graph_launches; ++l) {
        for (Slot& s : slots_) {
          FABRIC_TRY(check(api_, api_.graph_launch(s.graph_exec, s.stream), "cudaGraphLaunch"));
        }
      }
    } else {
      FABRIC_TRY(iterations(call, timing));
    }
    host_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
    if (per_iteration != nullptr) FABRIC_TRY(record_marks(timing.iters));
    FABRIC_TRY(record_all(&Slot::stop));
    FABRIC_TRY(wait());
    if (per_iteration != nullptr) {
      FABRIC_TRY(read_marks(timing, *per_iteration));
    }
    if (timing.report_cputime) return host_seconds / (static_cast<double>(ops) * launches);
    FABRIC_ASSIGN_OR_RETURN(double seconds, slowest_elapsed());
    return seconds / (static_cast<double>(ops) * launches);
  }

  Result<void> run_once(const CollectiveCall& call) override {
    FABRIC_TRY(launch(call));
    return wait();
  }

  // On the local rank's stream, then waited for: ordered after the collective that wrote
  // the output and before the next one that reads the input.
  Result<void> copy_in(const CollectiveCall& call, Region region, std::size_t offset,
                       std::span<const std::byte> bytes) override {
    FABRIC_ASSIGN_OR_RETURN(Slot * s, slot(call));
    FABRIC_ASSIGN_OR_RETURN(char* device, region_at(*s, call, region, offset, bytes.size()));
    FABRIC_TRY(check(
        api_,
        api_.memcpy_async(device, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, s->stream),
        "cudaMemcpyAsync to the GPU"));
    return wait();
  }

  Result<void> copy_out(const CollectiveCall& call, Region region, std::size_t offset,
                        std::span<std::byte> bytes) override {
    FABRIC_ASSIGN_OR_RETURN(Slot * s, slot(call));
    FABRIC_ASSIGN_OR_RETURN(char* device, region_at(*s, call, region, offset, bytes.size()));
    FABRIC_TRY(check(
        api_,
        api_.memcpy_async(bytes.data(), device, bytes.size(), cudaMemcpyDeviceToHost, s->stream),
        "cudaMemcpyAsync from the GPU"));
    return wait();
  }

  bool has_device_checks() const override { return slots_.front().kernels != nullptr; }

  Result<void> fill_on_device(const CollectiveCall& call, const CheckSpec& spec,
                              const OnLaunch& on_launch) override {
    FABRIC_ASSIGN_OR_RETURN(Slot * s, slot(call));
    FABRIC_ASSIGN_OR_RETURN(char* input,
                            region_at(*s, call, Region::kInput, 0, call.counts.send * elt(call)));
    // The kernels launch into the current context: the local rank's GPU.
    FABRIC_TRY(check(api_, api_.set_device(s->device), "cudaSetDevice"));
    const check_math::Params params = make_params(spec);
    for (const CheckLaunch& launch : plan_check_launches(call.counts.send)) {
      FABRIC_TRY(s->kernels->fill(params, call.type, input, launch, s->stream));
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
    FABRIC_ASSIGN_OR_RETURN(Slot * s, slot(call));
    FABRIC_ASSIGN_OR_RETURN(char* output,
                            region_at(*s, call, Region::kOutput, 0, call.counts.recv * elt(call)));
    FABRIC_TRY(check(api_, api_.set_device(s->device), "cudaSetDevice"));
    unsigned long long result[2] = {0, ~0ull};
    FABRIC_TRY(check(api_,
                     api_.memcpy_async(s->check_result, result, sizeof result,
                                       cudaMemcpyHostToDevice, s->stream),
                     "cudaMemcpyAsync to the GPU"));
    for (const CheckLaunch& launch : plan_check_launches(call.counts.recv)) {
      FABRIC_TRY(s->kernels->verify(params, call.type, output, launch,
                                    static_cast<unsigned long long*>(s->check_result), s->stream));
      FABRIC_TRY(wait());
      if (on_launch) on_launch();
    }
    FABRIC_TRY(check(api_,
                     api_.memcpy_async(result, s->check_result, sizeof result,
                                       cudaMemcpyDeviceToHost, s->stream),
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

  Result<std::vector<std::int64_t>> free_device_memory() override {
    std::vector<int> devices;
    for (const Slot& s : slots_)
      devices.push_back(s.device);
    return free_memory(api_, devices);
  }

  // Every GPU's communicator is split with the process's colour, in one NCCL group when
  // there are several (NCCL requires it of one thread's communicators); local rank i's key
  // is key x local_ranks() + i, so each group's ranks follow nccl-tests' numbering.
  Result<std::unique_ptr<Engine>> split(int color, int key) override {
    FABRIC_TRY(usable());
    int version = 0;
    if (api_.comm_split == nullptr && api_.get_version != nullptr) api_.get_version(&version);
    FABRIC_TRY(check_split(api_, version));
    ncclConfig_t config = comm_config(config_);
    std::vector<ncclComm_t> subs(slots_.size(), nullptr);
    Result<void> made = on_every_slot([&](Slot& s) {
      const std::size_t i = static_cast<std::size_t>(&s - slots_.data());
      const int slot_key = key * local_ranks() + static_cast<int>(i);
      return check(api_,
                   api_.comm_split(s.comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, slot_key,
                                   &subs[i], &config),
                   "ncclCommSplit", s.comm);
    });
    if (!made.ok()) {
      for (ncclComm_t sub : subs)
        if (sub != nullptr) api_.comm_abort(sub);
      return std::move(made).error();
    }
    if (subs.front() == nullptr) return std::unique_ptr<Engine>();
    std::vector<Member> members;
    for (std::size_t i = 0; i < slots_.size(); ++i)
      members.push_back(Member{subs[i], slots_[i].device});
    FABRIC_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                            make_nccl_engine(api_, std::move(members), config_));
    engine->poll_aborts(abort_request_);
    // Before the run's buffers exist (NCCL_TESTS_SPLIT), the caller allocates them.
    if (send_bytes_ > 0 || recv_bytes_ > 0) FABRIC_TRY(engine->allocate(send_bytes_, recv_bytes_));
    return engine;
  }

  void poll_aborts(const AbortRequest* request) override { abort_request_ = request; }

private:
  // After ncclCommAbort nothing may touch the communicators again.
  Result<void> usable() const {
    if (!aborted_) return Ok();
    return Error(ErrorCode::kSystem, "the collective", "the communicator was aborted");
  }

  static std::size_t elt(const CollectiveCall& call) { return data_type_size(call.type); }

  Result<Slot*> slot(const CollectiveCall& call) {
    if (call.local < 0 || static_cast<std::size_t>(call.local) >= slots_.size()) {
      return Error(ErrorCode::kInvalidArgument, "the nccl engine",
                   "local rank " + std::to_string(call.local) + " of " +
                       std::to_string(slots_.size()));
    }
    return &slots_[static_cast<std::size_t>(call.local)];
  }

  Result<void> allocate_buffer(void** buffer, std::size_t bytes) {
    if (api_.mem_alloc != nullptr && api_.mem_free != nullptr) {
      return check(api_, api_.mem_alloc(buffer, bytes), "ncclMemAlloc");
    }
    return check(api_, api_.malloc(buffer, bytes), "cudaMalloc");
  }

  void free_buffer(void* buffer) {
    if (buffer == nullptr) return;
    if (api_.mem_alloc != nullptr && api_.mem_free != nullptr) {
      api_.mem_free(buffer);
    } else {
      api_.free(buffer);
    }
  }

  Result<void> register_buffers(Slot& s) {
    if (config_.registration == Registration::kSymmetric) {
      FABRIC_TRY(
          check(api_,
                api_.comm_window_register(s.comm, s.send, std::max<std::size_t>(send_bytes_, 1),
                                          reinterpret_cast<ncclWindow_t*>(&s.send_handle),
                                          NCCL_WIN_COLL_SYMMETRIC),
                "ncclCommWindowRegister", s.comm));
      return check(api_,
                   api_.comm_window_register(s.comm, s.recv, std::max<std::size_t>(recv_bytes_, 1),
                                             reinterpret_cast<ncclWindow_t*>(&s.recv_handle),
                                             NCCL_WIN_COLL_SYMMETRIC),
                   "ncclCommWindowRegister", s.comm);
    }
    FABRIC_TRY(check(
        api_,
        api_.comm_register(s.comm, s.send, std::max<std::size_t>(send_bytes_, 1), &s.send_handle),
        "ncclCommRegister", s.comm));
    return check(
        api_,
        api_.comm_register(s.comm, s.recv, std::max<std::size_t>(recv_bytes_, 1), &s.recv_handle),
        "ncclCommRegister", s.comm);
  }

  void deregister(Slot& s) {
    for (void* handle : {s.send_handle, s.recv_handle}) {
      if (handle == nullptr) continue;
      if (config_.registration == Registration::kSymmetric) {
        api_.comm_window_deregister(s.comm, static_cast<ncclWindow_t>(handle));
      } else {
        api_.comm_deregister(s.comm, handle);
      }
    }
    s.send_handle = s.recv_handle = nullptr;
  }

  // Where `length` bytes of a region of `call` start on the slot's GPU, `offset` bytes in.
  static Result<char*> region_at(const Slot& s, const CollectiveCall& call, Region region,
                                 std::size_t offset, std::size_t length) {
    const std::size_t elt = data_type_size(call.type);
    char* recv = static_cast<char*>(s.recv);
    char* base = nullptr;
    std::size_t size = 0;
    if (region == Region::kInput) {
      base = call.in_place ? recv + call.counts.send_inplace * s.rank * elt
                           : static_cast<char*>(s.send);
      size = call.counts.send * elt;
    } else {
      base = recv + (call.in_place ? call.counts.recv_inplace * s.rank * elt : 0);
      size = call.counts.recv * elt;
    }
    base += call.unalign * elt;
    if (offset > size || length > size - offset) {
      return Error(ErrorCode::kInvalidArgument, "copying a check's data",
                   "beyond the collective's buffer");
    }
    return base + offset;
  }

  // Runs `each` on every slot inside one NCCL group; ncclGroupEnd is called even when one
  // failed, as NCCL requires.
  template <typename Each> Result<void> grouped(Each&& each) {
    FABRIC_TRY(check(api_, api_.group_start(), "ncclGroupStart"));
    Result<void> done = Ok();
    for (Slot& s : slots_) {
      done = each(s);
      if (!done.ok()) break;
    }
    Result<void> ended = check(api_, api_.group_end(), "ncclGroupEnd");
    FABRIC_TRY(done);
    return ended;
  }

  // Runs `each` on every slot; with several, in one group (grouped).
  template <typename Each> Result<void> on_every_slot(Each&& each) {
    FABRIC_TRY(usable());
    if (slots_.size() == 1) return each(slots_.front());
    return grouped(each);
  }

  // One operation of `call` on every slot's stream, not waited for. `shift`: where this
  // operation starts in the buffers (rotation_offset).
  Result<void> launch(const CollectiveCall& call, std::size_t shift = 0) {
    return on_every_slot([&](Slot& s) { return launch_on(s, call, shift); });
  }

  // mulsum's operation is made for the call and destroyed after it, per communicator, as
  // nccl-tests' startColl does.
  Result<void> launch_on(Slot& s, const CollectiveCall& call, std::size_t shift) {
    const ncclDataType_t type = nccl_type(call.type);
    if (call.op == ReduceOp::kMulSum && uses_op(call.collective)) {
      if (api_.red_op_create_pre_mul_sum == nullptr || api_.red_op_destroy == nullptr) {
        return Error(ErrorCode::kUnsupported, "-o mulsum",
                     "needs ncclRedOpCreatePreMulSum, which this NCCL lacks (NCCL 2.11 added it)");
      }
      std::array<std::byte, 8> scalar =
          stored_bytes(call.type, static_cast<double>(check_math::premul_scalar(s.rank)));
      ncclRedOp_t op{};
      FABRIC_TRY(check(
          api_,
          api_.red_op_create_pre_mul_sum(&op, scalar.data(), type, ncclScalarHostImmediate, s.comm),
          "ncclRedOpCreatePreMulSum", s.comm));
      Result<void> launched = launch_with(s, call, shift, type, op);
      FABRIC_TRY(check(api_, api_.red_op_destroy(op, s.comm), "ncclRedOpDestroy", s.comm));
      return launched;
    }
    return launch_with(s, call, shift, type, nccl_op(call.op));
  }

  Result<void> launch_with(Slot& s, const CollectiveCall& call, std::size_t shift,
                           ncclDataType_t type, ncclRedOp_t op) {
    const std::size_t elt = data_type_size(call.type);
    const std::size_t count = call.counts.param;
    char* recv = static_cast<char*>(s.recv) + shift + call.unalign * elt;
    const char* send = call.in_place
                           ? recv + call.counts.send_inplace * s.rank * elt
                           : static_cast<const char*>(s.send) + shift + call.unalign * elt;
    char* out = recv + (call.in_place ? call.counts.recv_inplace * s.rank * elt : 0);
    ncclComm_t comm = s.comm;
    cudaStream_t stream = s.stream;
    ncclResult_t rc = ncclSuccess;
    switch (call.collective) {
    case Collective::kAllReduce:
      rc = api_.all_reduce(send, out, count, type, op, comm, stream);
      break;
    case Collective::kAllGather: rc = api_.all_gather(send, out, count, type, comm, stream); break;
    case Collective::kReduceScatter:
      rc = api_.reduce_scatter(send, out, count, type, op, comm, stream);
      break;
    case Collective::kBroadcast:
      rc = api_.broadcast(send, out, count, type, call.root, comm, stream);
      break;
    case Collective::kReduce:
      rc = api_.reduce(send, out, count, type, op, call.root, comm, stream);
      break;
    case Collective::kAllToAll:
      if (api_.all_to_all != nullptr) {
        rc = api_.all_to_all(send, out, count, type, comm, stream);
        break;
      }
      FABRIC_TRY(check(api_, api_.group_start(), "ncclGroupStart", comm));
      for (int r = 0; r < size_ && rc == ncclSuccess; ++r) {
        rc = api_.send(send + r * count * elt, count, type, r, comm, stream);
        if (rc == ncclSuccess) rc = api_.recv(out + r * count * elt, count, type, r, comm, stream);
      }
      FABRIC_TRY(check(api_, api_.group_end(), "ncclGroupEnd", comm));
      break;
    case Collective::kSendRecv: {
      FABRIC_TRY(check(api_, api_.group_start(), "ncclGroupStart", comm));
      rc = api_.send(send, count, type, (s.rank + 1) % size_, comm, stream);
      if (rc == ncclSuccess)
        rc = api_.recv(out, count, type, (s.rank - 1 + size_) % size_, comm, stream);
      FABRIC_TRY(check(api_, api_.group_end(), "ncclGroupEnd", comm));
      break;
    }
    }
    return check(api_, rc, "launching the collective", comm);
  }

  Result<void> record_all(cudaEvent_t Slot::*event) {
    for (Slot& s : slots_) {
      FABRIC_TRY(check(api_, api_.event_record(s.*event, s.stream), "cudaEventRecord"));
    }
    return Ok();
  }

  // The process's time since the start events: its slowest GPU's, as nccl-tests' host timer
  // around all of a thread's GPUs measures it.
  Result<double> slowest_elapsed() {
    float slowest = 0;
    for (Slot& s : slots_) {
      float ms = 0;
      FABRIC_TRY(
          check(api_, api_.event_elapsed_time(&ms, s.start, s.stop), "cudaEventElapsedTime"));
      slowest = std::max(slowest, ms);
    }
    return static_cast<double>(slowest) / 1e3;
  }

  // -I 1's events, `count` per slot, made on the slot's device.
  Result<void> create_marks(int count) {
    for (Slot& s : slots_) {
      destroy_marks(s);
      FABRIC_TRY(check(api_, api_.set_device(s.device), "cudaSetDevice"));
      s.marks.assign(static_cast<std::size_t>(count), nullptr);
      for (cudaEvent_t& e : s.marks)
        FABRIC_TRY(check(api_, api_.event_create(&e), "cudaEventCreate"));
    }
    return Ok();
  }

  void destroy_marks(Slot& s) {
    for (cudaEvent_t e : s.marks) {
      if (e != nullptr) api_.event_destroy(e);
    }
    s.marks.clear();
  }

  Result<void> record_marks(int index) {
    for (Slot& s : slots_) {
      if (static_cast<std::size_t>(index) >= s.marks.size()) continue;
      FABRIC_TRY(check(api_, api_.event_record(s.marks[static_cast<std::size_t>(index)], s.stream),
                       "cudaEventRecord"));
    }
    return Ok();
  }

  // Each iteration's time per operation, the slowest GPU's, as nccl-tests' getElapsedTimes
  // then its maximum over GPUs; the events are gone afterwards.
  Result<void> read_marks(const TimingOptions& timing, std::vector<double>& out) {
    out.assign(static_cast<std::size_t>(timing.iters), 0.0);
    for (Slot& s : slots_) {
      for (std::size_t i = 0; i + 1 < s.marks.size() && i < out.size(); ++i) {
        float ms = 0;
        FABRIC_TRY(check(api_, api_.event_elapsed_time(&ms, s.marks[i], s.marks[i + 1]),
                         "cudaEventElapsedTime"));
        out[i] = std::max(out[i], static_cast<double>(ms) / 1e3 / timing.agg_iters);
      }
      destroy_marks(s);
    }
    return Ok();
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
      FABRIC_TRY(record_marks(i));
      if (timing.blocking == 1 || timing.blocking == 2) {
        for (int a = 0; a < timing.agg_iters; ++a) {
          FABRIC_TRY(launch(call, rotation_offset(call, timing.rotate_bytes, op0 + a)));
          FABRIC_TRY(wait());
          if (timing.blocking == 1) FABRIC_TRY(barrier());
        }
        continue;
      }
      if (timing.agg_iters > 1) FABRIC_TRY(check(api_, api_.group_start(), "ncclGroupStart"));
      for (int a = 0; a < timing.agg_iters; ++a)
        FABRIC_TRY(launch(call, rotation_offset(call, timing.rotate_bytes, op0 + a)));
      if (timing.agg_iters > 1) FABRIC_TRY(check(api_, api_.group_end(), "ncclGroupEnd"));
    }
    return Ok();
  }

  // -z 3: each iteration timed on its own and waited for, then a barrier outside the time.
  // `per_iteration` (-I 1), when set, receives each iteration's time per operation.
  Result<double> iteration_seconds(const CollectiveCall& call, const TimingOptions& timing,
                                   double& host_seconds, std::vector<double>* per_iteration) {
    double seconds = 0;
    for (int i = 0; i < timing.iters; ++i) {
      const auto host_start = std::chrono::steady_clock::now();
      FABRIC_TRY(record_all(&Slot::start));
      FABRIC_TRY(iterations(call, timing, i, 1));
      FABRIC_TRY(record_all(&Slot::stop));
      FABRIC_TRY(wait());
      host_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
      FABRIC_ASSIGN_OR_RETURN(double elapsed, slowest_elapsed());
      seconds += elapsed;
      if (per_iteration != nullptr) per_iteration->push_back(elapsed / timing.agg_iters);
      FABRIC_TRY(barrier());
    }
    return seconds;
  }

  // Every slot's stream captured at once (thread-local mode, as nccl-tests, so that NCCL's
  // own allocations during capture are allowed), then one graph per slot instantiated.
  Result<void> capture(const CollectiveCall& call, const TimingOptions& timing) {
    for (Slot& s : slots_) {
      if (s.graph_exec != nullptr) {
        api_.graph_exec_destroy(s.graph_exec);
        s.graph_exec = nullptr;
      }
    }
    std::size_t capturing = 0;
    Result<void> launched = Ok();
    for (Slot& s : slots_) {
      launched = check(api_, api_.stream_begin_capture(s.stream, cudaStreamCaptureModeThreadLocal),
                       "cudaStreamBeginCapture");
      if (!launched.ok()) break;
      ++capturing;
    }
    if (launched.ok()) {
      TimingOptions captured = timing;
      captured.blocking = 0;
      launched = iterations(call, captured);
    }
    std::vector<cudaGraph_t> graphs(slots_.size(), nullptr);
    Result<void> ended = Ok();
    for (std::size_t i = 0; i < capturing; ++i) {
      Result<void> end = check(api_, api_.stream_end_capture(slots_[i].stream, &graphs[i]),
                               "cudaStreamEndCapture");
      if (ended.ok()) ended = end;
    }
    Result<void> made = launched.ok() ? ended : launched;
    for (std::size_t i = 0; i < capturing; ++i) {
      if (made.ok()) {
        made = check(api_, api_.graph_instantiate_with_flags(&slots_[i].graph_exec, graphs[i], 0),
                     "cudaGraphInstantiateWithFlags");
      }
      if (graphs[i] != nullptr) api_.graph_destroy(graphs[i]);
    }
    return made;
  }

  // Everything on every stream done; NCCL's asynchronous errors (a dead peer, an abort) end
  // the wait with an error.
  Result<void> wait() {
    FABRIC_TRY(usable());
    std::size_t remaining = slots_.size();
    for (Slot& s : slots_)
      s.pending = true;
    for (;;) {
      for (Slot& s : slots_) {
        if (!s.pending) continue;
        cudaError_t rc = api_.stream_query(s.stream);
        if (rc == cudaSuccess) {
          s.pending = false;
          --remaining;
        } else if (rc != cudaErrorNotReady) {
          return check(api_, rc, "cudaStreamQuery");
        }
      }
      if (remaining == 0) return Ok();
      for (Slot& s : slots_) {
        ncclResult_t async = ncclSuccess;
        FABRIC_TRY(check(api_, api_.comm_get_async_error(s.comm, &async), "ncclCommGetAsyncError",
                         s.comm));
        if (async != ncclSuccess) {
          Error error = check(api_, async, "the collective (asynchronous error)", s.comm).error();
          abort_comms();
          return error;
        }
      }
      if (abort_request_ != nullptr && abort_request_->requested()) {
        abort_comms();
        return Error(ErrorCode::kSystem, "the collective",
                     "aborted (ncclCommAbort): " + abort_request_->reason());
      }
      std::this_thread::yield();
    }
  }

  // As nccl-tests does on an asynchronous error or a timeout: every communicator's pending
  // operations are stopped, and none is used (nor destroyed) again.
  void abort_comms() {
    if (aborted_) return;
    aborted_ = true;
    for (Slot& s : slots_)
      api_.comm_abort(s.comm);
  }

  // All ranks of this communicator at the same point: a one-element all-reduce.
  Result<void> barrier() {
    FABRIC_TRY(on_every_slot([&](Slot& s) {
      return check(api_, api_.all_reduce(s.flag, s.flag, 1, ncclInt32, ncclSum, s.comm, s.stream),
                   "ncclAllReduce (barrier)", s.comm);
    }));
    return wait();
  }

  const Api& api_;
  EngineConfig config_;
  std::vector<Slot> slots_;
  int size_ = 0;
  std::size_t send_bytes_ = 0, recv_bytes_ = 0;
  const AbortRequest* abort_request_ = nullptr;
  bool aborted_ = false; // ncclCommAbort was called: the communicators are gone
};

} // namespace

Result<std::unique_ptr<Engine>> make_nccl_engine(const Api& api, std::vector<Member> members,
                                                 const EngineConfig& config) {
  auto engine = std::make_unique<NcclEngine>(api, std::move(members), config);
  FABRIC_TRY(engine->init());
  return std::unique_ptr<Engine>(std::move(engine));
}

Result<std::unique_ptr<Engine>> make_nccl_engine(const Api& api, ncclComm_t comm, int device) {
  return make_nccl_engine(api, {Member{comm, device}});
}

} // namespace fabric::nccltest::nccl
