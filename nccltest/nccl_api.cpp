#include "nccltest/nccl_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "common/cuda_runtime.h"
#include "nccltest/collectives.h"

namespace fabric::nccltest::nccl {
namespace {

struct Loaded {
  Api api;
  std::string error;
};

void* open_nccl() {
  static constexpr const char* kCandidates[] = {"libnccl.so.2", FABRIC_NCCL_LIBDIR "/libnccl.so.2",
                                                "libnccl.so"};
  for (const char* name : kCandidates) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

template <typename Fn>
void bind(void* handle, Fn& fn, const char* name, std::string& error, bool optional = false) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (fn == nullptr && !optional && error.empty()) error = std::string("lacks ") + name;
}

const Loaded& loaded() {
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] {
    void* cudart = cuda::runtime_library();
    if (cudart == nullptr) {
      l.error = "the CUDA runtime library (libcudart) was not found";
      return;
    }
    void* nccl = open_nccl();
    if (nccl == nullptr) {
      l.error = "the NCCL library (libnccl.so.2) was not found";
      return;
    }
    Api& a = l.api;
    std::string nccl_error, cuda_error;
    bind(nccl, a.get_version, "ncclGetVersion", nccl_error);
    bind(nccl, a.get_unique_id, "ncclGetUniqueId", nccl_error);
    bind(nccl, a.comm_init_rank_config, "ncclCommInitRankConfig", nccl_error);
    bind(nccl, a.comm_destroy, "ncclCommDestroy", nccl_error);
    bind(nccl, a.comm_abort, "ncclCommAbort", nccl_error);
    bind(nccl, a.comm_split, "ncclCommSplit", nccl_error);
    bind(nccl, a.comm_get_async_error, "ncclCommGetAsyncError", nccl_error);
    bind(nccl, a.comm_count, "ncclCommCount", nccl_error);
    bind(nccl, a.comm_user_rank, "ncclCommUserRank", nccl_error);
    bind(nccl, a.all_reduce, "ncclAllReduce", nccl_error);
    bind(nccl, a.all_gather, "ncclAllGather", nccl_error);
    bind(nccl, a.reduce_scatter, "ncclReduceScatter", nccl_error);
    bind(nccl, a.broadcast, "ncclBroadcast", nccl_error);
    bind(nccl, a.reduce, "ncclReduce", nccl_error);
    bind(nccl, a.all_to_all, "ncclAlltoAll", nccl_error, /*optional=*/true);
    bind(nccl, a.send, "ncclSend", nccl_error);
    bind(nccl, a.recv, "ncclRecv", nccl_error);
    bind(nccl, a.group_start, "ncclGroupStart", nccl_error);
    bind(nccl, a.group_end, "ncclGroupEnd", nccl_error);
    bind(nccl, a.get_error_string, "ncclGetErrorString", nccl_error);
    bind(nccl, a.get_last_error, "ncclGetLastError", nccl_error, /*optional=*/true);
    bind(cudart, a.set_device, "cudaSetDevice", cuda_error);
    bind(cudart, a.malloc, "cudaMalloc", cuda_error);
    bind(cudart, a.free, "cudaFree", cuda_error);
    bind(cudart, a.memcpy, "cudaMemcpy", cuda_error);
    bind(cudart, a.mem_get_info, "cudaMemGetInfo", cuda_error);
    bind(cudart, a.device_get_pci_bus_id, "cudaDeviceGetPCIBusId", cuda_error);
    // CUDA 12 renamed the entry point (the struct grew); its name field stays first.
    bind(cudart, a.get_device_properties, "cudaGetDeviceProperties_v2", cuda_error, true);
    if (a.get_device_properties == nullptr) {
      bind(cudart, a.get_device_properties, "cudaGetDeviceProperties", cuda_error);
    }
    bind(cudart, a.stream_create_with_flags, "cudaStreamCreateWithFlags", cuda_error);
    bind(cudart, a.stream_destroy, "cudaStreamDestroy", cuda_error);
    bind(cudart, a.stream_synchronize, "cudaStreamSynchronize", cuda_error);
    bind(cudart, a.stream_query, "cudaStreamQuery", cuda_error);
    bind(cudart, a.event_create, "cudaEventCreate", cuda_error);
    bind(cudart, a.event_destroy, "cudaEventDestroy", cuda_error);
    bind(cudart, a.event_record, "cudaEventRecord", cuda_error);
    bind(cudart, a.event_synchronize, "cudaEventSynchronize", cuda_error);
    bind(cudart, a.event_elapsed_time, "cudaEventElapsedTime", cuda_error);
    bind(cudart, a.stream_begin_capture, "cudaStreamBeginCapture", cuda_error);
    bind(cudart, a.stream_end_capture, "cudaStreamEndCapture", cuda_error);
    bind(cudart, a.graph_instantiate_with_flags, "cudaGraphInstantiateWithFlags", cuda_error);
    bind(cudart, a.graph_launch, "cudaGraphLaunch", cuda_error);
    bind(cudart, a.graph_exec_destroy, "cudaGraphExecDestroy", cuda_error);
    bind(cudart, a.graph_destroy, "cudaGraphDestroy", cuda_error);
    bind(cudart, a.cuda_error_string, "cudaGetErrorString", cuda_error);
    bind(cudart, a.memcpy_async, "cudaMemcpyAsync", cuda_error);
    if (!nccl_error.empty()) l.error = "libnccl " + nccl_error;
    if (!cuda_error.empty()) l.error = "libcudart " + cuda_error;
  });
  return l;
}

} // namespace

Result<const Api*> api() {
  const Loaded& l = loaded();
  if (!l.error.empty()) {
    return Error(ErrorCode::kNotBuilt, "loading NCCL", l.error)
        .with_hint("install NCCL and the CUDA runtime, or add their folder to LD_LIBRARY_PATH");
  }
  return &l.api;
}

Result<void> check(const Api& a, ncclResult_t rc, const char* operation, ncclComm_t comm) {
  if (rc == ncclSuccess) return Ok();
  std::string detail = a.get_error_string ? a.get_error_string(rc) : "NCCL error";
  if (a.get_last_error != nullptr) {
    const char* last = a.get_last_error(comm);
    if (last != nullptr && *last != '\0') detail += ": " + std::string(last);
  }
  ErrorCode code = rc == ncclInvalidArgument || rc == ncclInvalidUsage ? ErrorCode::kInvalidArgument
                                                                       : ErrorCode::kSystem;
  return Error(code, operation,
               detail + " (ncclResult " + std::to_string(static_cast<int>(rc)) + ")");
}

Result<void> check(const Api& a, cudaError_t rc, const char* operation) {
  if (rc == cudaSuccess) return Ok();
  std::string detail = a.cuda_error_string ? a.cuda_error_string(rc) : "CUDA error";
  ErrorCode code = rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver
                       ? ErrorCode::kUnsupported
                       : ErrorCode::kSystem;
  return Error(code, operation,
               detail + " (cudaError " + std::to_string(static_cast<int>(rc)) + ")");
}

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
  case DataType::kFloat: return ncclFloat32;
  case DataType::kDouble: return ncclFloat64;
  case DataType::kInt32: return ncclInt32;
  case DataType::kInt64: return ncclInt64;
  case DataType::kHalf: return ncclFloat16;
  case DataType::kBfloat16: return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
  case ReduceOp::kSum: return ncclSum;
  case ReduceOp::kProd: return ncclProd;
  case ReduceOp::kMax: return ncclMax;
  case ReduceOp::kMin: return ncclMin;
  case ReduceOp::kAvg: return ncclAvg;
  }
  return ncclSum;
}

} // namespace fabric::nccltest::nccl
