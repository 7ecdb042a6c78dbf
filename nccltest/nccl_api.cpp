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

// libnccl.so.2 where cuda_library.h says to look; `tried` lists where it was not.
void* open_nccl(std::string& tried) {
  const cuda::SearchDirs dirs = cuda::library_search_dirs_here();
  for (const std::string& path :
       cuda::library_candidates("libnccl.so.2", dirs, FABRIC_NCCL_LIBDIR)) {
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    if (path.find('/') != std::string::npos) tried += (tried.empty() ? "" : ", ") + path;
  }
  return nullptr;
}

template <typename Fn>
void bind(const SymbolLookup& lookup, Fn& fn, const char* name, std::string& error,
          bool optional = false) {
  fn = reinterpret_cast<Fn>(lookup(name));
  if (fn == nullptr && !optional && error.empty()) error = std::string("lacks ") + name;
}

const Loaded& loaded() {
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] {
    void* cudart = cuda::runtime_library();
    if (cudart == nullptr) {
      l.error = "no CUDA runtime: " + cuda::runtime_library_problem();
      return;
    }
    std::string tried;
    void* nccl = open_nccl(tried);
    if (nccl == nullptr) {
      l.error = "the NCCL library (libnccl.so.2) was not found on the loader's path" +
                (tried.empty() ? std::string() : " nor in " + tried);
      return;
    }
    l.error = bind_api(
        l.api, [nccl](const char* name) { return dlsym(nccl, name); },
        [cudart](const char* name) { return dlsym(cudart, name); });
  });
  return l;
}

} // namespace

std::string bind_api(Api& a, const SymbolLookup& nccl, const SymbolLookup& cudart) {
  std::string nccl_error, cuda_error;
  bind(nccl, a.get_version, "ncclGetVersion", nccl_error);
  bind(nccl, a.get_unique_id, "ncclGetUniqueId", nccl_error);
  bind(nccl, a.comm_init_rank_config, "ncclCommInitRankConfig", nccl_error);
  bind(nccl, a.comm_destroy, "ncclCommDestroy", nccl_error);
  bind(nccl, a.comm_abort, "ncclCommAbort", nccl_error);
  bind(nccl, a.comm_split, "ncclCommSplit", nccl_error, /*optional=*/true);
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
  bind(nccl, a.red_op_create_pre_mul_sum, "ncclRedOpCreatePreMulSum", nccl_error,
       /*optional=*/true);
  bind(nccl, a.red_op_destroy, "ncclRedOpDestroy", nccl_error, /*optional=*/true);
  bind(nccl, a.group_start, "ncclGroupStart", nccl_error);
  bind(nccl, a.group_end, "ncclGroupEnd", nccl_error);
  bind(nccl, a.comm_register, "ncclCommRegister", nccl_error, true);
  bind(nccl, a.comm_deregister, "ncclCommDeregister", nccl_error, true);
  bind(nccl, a.comm_window_register, "ncclCommWindowRegister", nccl_error, true);
  bind(nccl, a.comm_window_deregister, "ncclCommWindowDeregister", nccl_error, true);
  bind(nccl, a.mem_alloc, "ncclMemAlloc", nccl_error, true);
  bind(nccl, a.mem_free, "ncclMemFree", nccl_error, true);
  bind(nccl, a.get_error_string, "ncclGetErrorString", nccl_error);
  bind(nccl, a.get_last_error, "ncclGetLastError", nccl_error, /*optional=*/true);
  bind(cudart, a.set_device, "cudaSetDevice", cuda_error);
  bind(cudart, a.malloc, "cudaMalloc", cuda_error);
  bind(cudart, a.free, "cudaFree", cuda_error);
  bind(cudart, a.memcpy, "cudaMemcpy", cuda_error);
  bind(cudart, a.mem_get_info, "cudaMemGetInfo", cuda_error);
  bind(cudart, a.device_get_attribute, "cudaDeviceGetAttribute", cuda_error);
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
  if (!cuda_error.empty()) return "libcudart " + cuda_error;
  if (!nccl_error.empty()) return "libnccl " + nccl_error;
  return "";
}

Result<void> check_split(const Api& a, int library_version) {
  if (a.comm_split != nullptr) return Ok();
  return Error(ErrorCode::kUnsupported, "--pairs",
               "needs ncclCommSplit, which NCCL 2.18 added; this NCCL is " +
                   nccl_version_text(library_version))
      .with_hint("install NCCL 2.18 or newer (or name its folder in FABRIC_CUDA_LIBRARY_PATH)");
}

std::string nccl_version_text(int code) {
  if (code <= 0) return "of an unknown version";
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9; X*1000 + Y*100 + Z before.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

Result<const Api*> api() {
  const Loaded& l = loaded();
  if (!l.error.empty()) {
    return Error(ErrorCode::kNotBuilt, "loading NCCL", l.error)
        .with_hint(std::string("install NCCL and a CUDA runtime that fits the driver, or name "
                               "their folders in ") +
                   cuda::kLibraryPathEnv);
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
  case DataType::kInt8: return ncclInt8;
  case DataType::kUint8: return ncclUint8;
  case DataType::kUint32: return ncclUint32;
  case DataType::kUint64: return ncclUint64;
  case DataType::kFloat8e4m3: return ncclFloat8e4m3;
  case DataType::kFloat8e5m2: return ncclFloat8e5m2;
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
  case ReduceOp::kMulSum: break;
  }
  return ncclSum;
}

} // namespace fabric::nccltest::nccl
