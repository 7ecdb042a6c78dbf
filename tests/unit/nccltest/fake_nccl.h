// A recording stand-in for NCCL and the CUDA runtime (no GPU here): every entry point the
// nccl engine calls, as an Api table whose calls are recorded with the thread, the
// communicator, the stream and the current device they came with. The engine's tests
// check the order of these records.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccltest/nccl_api.h"

namespace fabric::nccltest::nccl::fake {

struct Call {
  std::string name;
  std::thread::id thread;
  int comm = -1;                 // index of the communicator (fake_comm(i)), -1 when none
  int stream = -1;               // index of the stream, in creation order, -1 when none
  int device = -1;               // the device current at the call
  int rank = -1;                 // ncclCommInitRankConfig's rank
  const void* pointer = nullptr; // the buffer a copy, registration or free touched
  // ncclCommInitRankConfig's and ncclCommSplit's ncclConfig_t, as NCCL read it.
  int cta_policy = NCCL_CONFIG_UNDEF_INT;
  int nvlink_centric_sched = NCCL_CONFIG_UNDEF_INT;
  int color = 0, key = 0; // ncclCommSplit's
};

inline constexpr int kComms = 16;
inline constexpr int kStreams = 64;

struct State {
  std::mutex mutex;
  std::vector<Call> calls;
  std::atomic<bool> stream_busy{true}; // the collective never completes by itself
  std::atomic<int> async_queries{0};
  std::atomic<int> streams{0};
  std::atomic<int> nranks{2};            // what ncclCommCount says
  std::vector<const void*> send_buffers; // each all-reduce's send pointer (not the barrier's)
  std::vector<std::vector<unsigned char>> premul_scalars; // as NCCL read them, per operation
  std::vector<ncclDataType_t> premul_types;
  // add_event_clock: events told apart by number (1, 2, ... in creation order), each
  // event's device, and the elapsed milliseconds from event `start` to event `stop`.
  std::atomic<int> events_created{0};
  std::atomic<int> events_destroyed{0};
  std::vector<int> event_devices{0}; // by number; [0] unused
  std::function<float(int start, int stop)> event_ms = [](int, int) { return 1.0f; };
  // Device memory: a bump allocator over one block, so that every buffer is distinct.
  alignas(64) char memory[1 << 16] = {};
  std::size_t used = 0;
  // What cudaMemGetInfo says: each device's free memory falls by every allocation made on
  // it (never given back), and by `init_bytes` for each communicator made on it.
  static constexpr std::int64_t kDeviceBytes = std::int64_t{80} << 30;
  std::map<int, std::int64_t> device_used;
  std::atomic<std::int64_t> init_bytes{0};
  void* allocate(std::size_t bytes) {
    std::lock_guard lock(mutex);
    void* p = memory + used;
    used += (std::min<std::size_t>(bytes, 256) + 63) / 64 * 64;
    device_used[current_device()] += static_cast<std::int64_t>(bytes);
    return p;
  }
  void record(Call c) {
    c.thread = std::this_thread::get_id();
    c.device = current_device();
    std::lock_guard lock(mutex);
    calls.push_back(std::move(c));
  }
  static int& current_device() {
    thread_local int device = 0;
    return device;
  }
};
inline State* g_state = nullptr;

inline ncclComm_t fake_comm(int i = 0) {
  static int storage[kComms];
  return reinterpret_cast<ncclComm_t>(&storage[i]);
}
inline int comm_index(ncclComm_t comm) {
  for (int i = 0; i < kComms; ++i)
    if (comm == fake_comm(i)) return i;
  return -1;
}
inline int stream_index(cudaStream_t s) {
  return static_cast<int>(reinterpret_cast<std::uintptr_t>(s)) - 1;
}

inline void record(const char* name, ncclComm_t comm = nullptr, cudaStream_t stream = nullptr,
                   const void* pointer = nullptr) {
  Call c;
  c.name = name;
  c.comm = comm ? comm_index(comm) : -1;
  c.stream = stream ? stream_index(stream) : -1;
  c.pointer = pointer;
  g_state->record(std::move(c));
}

// The table: communicator i is rank i; streams complete when stream_busy is false. Optional
// entry points (registration, ncclMemAlloc, ncclCommSplit) are left out: tests add them.
inline Api api() {
  Api a;
  a.comm_user_rank = [](const ncclComm_t c, int* r) {
    *r = comm_index(c);
    return ncclSuccess;
  };
  a.comm_count = [](const ncclComm_t, int* n) {
    *n = g_state->nranks;
    return ncclSuccess;
  };
  a.comm_init_rank_config = [](ncclComm_t* comm, int, ncclUniqueId, int rank,
                               ncclConfig_t* config) {
    *comm = fake_comm(rank % kComms);
    Call c;
    c.name = "ncclCommInitRankConfig";
    c.rank = rank;
    c.cta_policy = config->CTAPolicy;
    c.nvlink_centric_sched = config->nvlinkCentricSched;
    {
      std::lock_guard lock(g_state->mutex);
      g_state->device_used[State::current_device()] += g_state->init_bytes;
    }
    g_state->record(std::move(c));
    return ncclSuccess;
  };
  a.mem_get_info = [](size_t* free_bytes, size_t* total) {
    std::lock_guard lock(g_state->mutex);
    *total = static_cast<size_t>(State::kDeviceBytes);
    *free_bytes =
        static_cast<size_t>(State::kDeviceBytes - g_state->device_used[State::current_device()]);
    return cudaSuccess;
  };
  a.comm_abort = [](ncclComm_t c) {
    record("ncclCommAbort", c);
    return ncclSuccess;
  };
  a.comm_destroy = [](ncclComm_t c) {
    record("ncclCommDestroy", c);
    return ncclSuccess;
  };
  a.comm_get_async_error = [](ncclComm_t c, ncclResult_t* r) {
    record("ncclCommGetAsyncError", c);
    ++g_state->async_queries;
    *r = ncclSuccess;
    return ncclSuccess;
  };
  // The engine's barrier is a one-element int32 all-reduce; the tests' calls are floats.
  a.all_reduce = [](const void* send, void*, size_t count, ncclDataType_t type, ncclRedOp_t,
                    ncclComm_t c, cudaStream_t s) {
    const bool barrier = count == 1 && type == ncclInt32;
    record(barrier ? "barrier" : "ncclAllReduce", c, s);
    if (!barrier) {
      std::lock_guard lock(g_state->mutex);
      g_state->send_buffers.push_back(send);
    }
    return ncclSuccess;
  };
  // mulsum: the scalar as NCCL reads it (host memory, the data's type).
  a.red_op_create_pre_mul_sum = [](ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                   ncclScalarResidence_t residence, ncclComm_t c) {
    record("ncclRedOpCreatePreMulSum", c);
    if (residence != ncclScalarHostImmediate) return ncclInvalidArgument;
    const auto* bytes = static_cast<const unsigned char*>(scalar);
    const std::size_t size = type == ncclFloat16 ? 2 : type == ncclUint8 ? 1 : 4;
    std::lock_guard lock(g_state->mutex);
    g_state->premul_scalars.emplace_back(bytes, bytes + size);
    g_state->premul_types.push_back(type);
    *op = static_cast<ncclRedOp_t>(ncclNumOps + 1);
    return ncclSuccess;
  };
  a.red_op_destroy = [](ncclRedOp_t op, ncclComm_t c) {
    record(op == ncclNumOps + 1 ? "ncclRedOpDestroy" : "ncclRedOpDestroy(unknown op)", c);
    return ncclSuccess;
  };
  a.group_start = [] {
    record("ncclGroupStart");
    return ncclSuccess;
  };
  a.group_end = [] {
    record("ncclGroupEnd");
    return ncclSuccess;
  };
  a.get_version = [](int* v) {
    *v = 21703;
    return ncclSuccess;
  };
  a.event_record = [](cudaEvent_t, cudaStream_t s) {
    record("cudaEventRecord", nullptr, s);
    return cudaSuccess;
  };
  a.event_elapsed_time = [](float* ms, cudaEvent_t, cudaEvent_t) {
    *ms = 1;
    return cudaSuccess;
  };
  a.stream_begin_capture = [](cudaStream_t s, cudaStreamCaptureMode) {
    record("cudaStreamBeginCapture", nullptr, s);
    return cudaSuccess;
  };
  a.stream_end_capture = [](cudaStream_t s, cudaGraph_t* g) {
    record("cudaStreamEndCapture", nullptr, s);
    *g = reinterpret_cast<cudaGraph_t>(1);
    return cudaSuccess;
  };
  a.graph_instantiate_with_flags = [](cudaGraphExec_t* e, cudaGraph_t, unsigned long long) {
    record("cudaGraphInstantiate");
    *e = reinterpret_cast<cudaGraphExec_t>(1);
    return cudaSuccess;
  };
  a.graph_destroy = [](cudaGraph_t) { return cudaSuccess; };
  a.graph_exec_destroy = [](cudaGraphExec_t) { return cudaSuccess; };
  a.graph_launch = [](cudaGraphExec_t, cudaStream_t s) {
    record("cudaGraphLaunch", nullptr, s);
    return cudaSuccess;
  };
  a.get_error_string = [](ncclResult_t) { return "fake"; };
  a.set_device = [](int d) {
    State::current_device() = d;
    return cudaSuccess;
  };
  a.stream_create_with_flags = [](cudaStream_t* s, unsigned) {
    *s = reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(++g_state->streams));
    return cudaSuccess;
  };
  a.stream_destroy = [](cudaStream_t) { return cudaSuccess; };
  a.event_create = [](cudaEvent_t* e) {
    *e = reinterpret_cast<cudaEvent_t>(1);
    return cudaSuccess;
  };
  a.event_destroy = [](cudaEvent_t) { return cudaSuccess; };
  a.malloc = [](void** p, size_t bytes) {
    *p = g_state->allocate(bytes);
    record("cudaMalloc", nullptr, nullptr, *p);
    return cudaSuccess;
  };
  a.free = [](void* p) {
    record("cudaFree", nullptr, nullptr, p);
    return cudaSuccess;
  };
  a.memcpy_async = [](void* dst, const void*, size_t, cudaMemcpyKind kind, cudaStream_t s) {
    record("cudaMemcpyAsync", nullptr, s, kind == cudaMemcpyHostToDevice ? dst : nullptr);
    return cudaSuccess;
  };
  a.stream_query = [](cudaStream_t s) {
    if (g_state->stream_busy) return cudaErrorNotReady;
    record("wait", nullptr, s);
    return cudaSuccess;
  };
  a.cuda_error_string = [](cudaError_t) { return "fake"; };
  return a;
}

// ncclCommSplit (NCCL 2.18): communicator i's part in colour c is communicator
// kSplitBase + i; NCCL_SPLIT_NOCOLOR gets none. The colour and key are recorded.
inline constexpr int kSplitBase = 8;
inline void add_split(Api& a) {
  a.comm_split = [](ncclComm_t c, int color, int key, ncclComm_t* sub, ncclConfig_t* config) {
    Call call;
    call.name = "ncclCommSplit";
    call.comm = comm_index(c);
    call.color = color;
    call.key = key;
    call.cta_policy = config->CTAPolicy;
    call.nvlink_centric_sched = config->nvlinkCentricSched;
    g_state->record(std::move(call));
    *sub = color == NCCL_SPLIT_NOCOLOR ? nullptr : fake_comm(kSplitBase + comm_index(c));
    return ncclSuccess;
  };
}

// Events that carry their number, so that cudaEventElapsedTime answers State::event_ms for
// the pair it is given; destroyed events are counted.
inline int event_number(cudaEvent_t e) {
  return static_cast<int>(reinterpret_cast<std::uintptr_t>(e));
}
inline void add_event_clock(Api& a) {
  a.event_create = [](cudaEvent_t* e) {
    const int n = ++g_state->events_created;
    {
      std::lock_guard lock(g_state->mutex);
      g_state->event_devices.resize(static_cast<std::size_t>(n) + 1);
      g_state->event_devices[static_cast<std::size_t>(n)] = State::current_device();
    }
    *e = reinterpret_cast<cudaEvent_t>(static_cast<std::uintptr_t>(n));
    return cudaSuccess;
  };
  a.event_destroy = [](cudaEvent_t) {
    ++g_state->events_destroyed;
    return cudaSuccess;
  };
  a.event_elapsed_time = [](float* ms, cudaEvent_t start, cudaEvent_t stop) {
    *ms = g_state->event_ms(event_number(start), event_number(stop));
    return cudaSuccess;
  };
}

// The optional entry points of NCCL 2.19 (ncclMemAlloc, ncclCommRegister) and 2.27
// (ncclCommWindowRegister).
inline void add_mem_alloc(Api& a) {
  a.mem_alloc = [](void** p, size_t bytes) {
    *p = g_state->allocate(bytes);
    record("ncclMemAlloc", nullptr, nullptr, *p);
    return ncclSuccess;
  };
  a.mem_free = [](void* p) {
    record("ncclMemFree", nullptr, nullptr, p);
    return ncclSuccess;
  };
}
inline void add_registration(Api& a) {
  a.comm_register = [](const ncclComm_t c, void* buffer, size_t, void** handle) {
    record("ncclCommRegister", c, nullptr, buffer);
    *handle = buffer;
    return ncclSuccess;
  };
  a.comm_deregister = [](const ncclComm_t c, void* handle) {
    record("ncclCommDeregister", c, nullptr, handle);
    return ncclSuccess;
  };
}
inline void add_windows(Api& a) {
  a.comm_window_register = [](ncclComm_t c, void* buffer, size_t, ncclWindow_t* w, int flags) {
    record(flags == NCCL_WIN_COLL_SYMMETRIC ? "ncclCommWindowRegister(symmetric)"
                                            : "ncclCommWindowRegister",
           c, nullptr, buffer);
    *w = reinterpret_cast<ncclWindow_t>(buffer);
    return ncclSuccess;
  };
  a.comm_window_deregister = [](ncclComm_t c, ncclWindow_t w) {
    record("ncclCommWindowDeregister", c, nullptr, w);
    return ncclSuccess;
  };
}

} // namespace fabric::nccltest::nccl::fake
