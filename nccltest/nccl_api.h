// NCCL and the CUDA runtime, loaded with dlopen and wrapped once: each entry point the nccl
// backend calls is looked up here, and each return convention (ncclResult_t with
// ncclGetLastError's detail; cudaError_t with cudaGetErrorString) becomes an Error in one
// place. Only the nccl backend's own files include this (it includes nccl.h and
// cuda_runtime_api.h, for the types).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <string>

#include "common/result.h"
#include "nccltest/collectives.h"

namespace fabric::nccltest::nccl {

struct Api {
  // NCCL
  ncclResult_t (*get_version)(int*) = nullptr;
  ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank_config)(ncclComm_t*, int, ncclUniqueId, int,
                                        ncclConfig_t*) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_abort)(ncclComm_t) = nullptr;
  // Optional: NCCL 2.18 added it; only --pairs needs it.
  ncclResult_t (*comm_split)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*) = nullptr;
  ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*comm_count)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*comm_user_rank)(const ncclComm_t, int*) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*all_gather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*reduce_scatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                 ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                         cudaStream_t) = nullptr;
  // Optional: NCCL before 2.28 has no ncclAlltoAll; send/recv pairs stand in.
  ncclResult_t (*all_to_all)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t) = nullptr;
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  // Optional: mulsum only (ncclRedOpCreatePreMulSum, NCCL 2.11).
  ncclResult_t (*red_op_create_pre_mul_sum)(ncclRedOp_t*, void*, ncclDataType_t,
                                            ncclScalarResidence_t, ncclComm_t) = nullptr;
  ncclResult_t (*red_op_destroy)(ncclRedOp_t, ncclComm_t) = nullptr;
  ncclResult_t (*group_start)() = nullptr;
  ncclResult_t (*group_end)() = nullptr;
  // Optional: NCCL 2.19 added buffer registration (-R 1) and ncclMemAlloc, 2.27 symmetric
  // windows (-R 2); nccl-tests allocates with ncclMemAlloc where NCCL has it.
  ncclResult_t (*comm_register)(const ncclComm_t, void*, size_t, void**) = nullptr;
  ncclResult_t (*comm_deregister)(const ncclComm_t, void*) = nullptr;
  ncclResult_t (*comm_window_register)(ncclComm_t, void*, size_t, ncclWindow_t*, int) = nullptr;
  ncclResult_t (*comm_window_deregister)(ncclComm_t, ncclWindow_t) = nullptr;
  ncclResult_t (*mem_alloc)(void**, size_t) = nullptr;
  ncclResult_t (*mem_free)(void*) = nullptr;
  const char* (*get_error_string)(ncclResult_t) = nullptr;
  const char* (*get_last_error)(ncclComm_t) = nullptr;

  // CUDA runtime
  cudaError_t (*set_device)(int) = nullptr;
  cudaError_t (*malloc)(void**, size_t) = nullptr;
  cudaError_t (*free)(void*) = nullptr;
  cudaError_t (*memcpy)(void*, const void*, size_t, cudaMemcpyKind) = nullptr;
  cudaError_t (*mem_get_info)(size_t*, size_t*) = nullptr;
  cudaError_t (*device_get_pci_bus_id)(char*, int, int) = nullptr;
  cudaError_t (*get_device_properties)(void*, int) = nullptr; // cudaDeviceProp, name first
  cudaError_t (*device_get_attribute)(int*, cudaDeviceAttr, int) = nullptr;
  cudaError_t (*stream_create_with_flags)(cudaStream_t*, unsigned) = nullptr;
  cudaError_t (*stream_destroy)(cudaStream_t) = nullptr;
  cudaError_t (*stream_synchronize)(cudaStream_t) = nullptr;
  cudaError_t (*stream_query)(cudaStream_t) = nullptr;
  cudaError_t (*event_create)(cudaEvent_t*) = nullptr;
  cudaError_t (*event_destroy)(cudaEvent_t) = nullptr;
  cudaError_t (*event_record)(cudaEvent_t, cudaStream_t) = nullptr;
  cudaError_t (*event_synchronize)(cudaEvent_t) = nullptr;
  cudaError_t (*event_elapsed_time)(float*, cudaEvent_t, cudaEvent_t) = nullptr;
  cudaError_t (*stream_begin_capture)(cudaStream_t, cudaStreamCaptureMode) = nullptr;
  cudaError_t (*stream_end_capture)(cudaStream_t, cudaGraph_t*) = nullptr;
  cudaError_t (*graph_instantiate_with_flags)(cudaGraphExec_t*, cudaGraph_t,
                                              unsigned long long) = nullptr;
  cudaError_t (*graph_launch)(cudaGraphExec_t, cudaStream_t) = nullptr;
  cudaError_t (*graph_exec_destroy)(cudaGraphExec_t) = nullptr;
  cudaError_t (*graph_destroy)(cudaGraph_t) = nullptr;
  const char* (*cuda_error_string)(cudaError_t) = nullptr;
  // Copies ordered on the collective's stream (the checks' data; a plain cudaMemcpy runs
  // on the legacy default stream, unordered with a non-blocking stream).
  cudaError_t (*memcpy_async)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t) = nullptr;
};

// Looks `name` up in one library (dlsym over its handle, or a test's table).
using SymbolLookup = std::function<void*(const char*)>;

// Fills `a` from the two libraries; returns what a required entry point lacks ("libnccl
// lacks ncclAllReduce"), or "". Optional ones (ncclCommSplit, ncclAlltoAll,
// ncclGetLastError, the registration and ncclMemAlloc entry points) stay nullptr: only
// the features that need them refuse or fall back.
std::string bind_api(Api& a, const SymbolLookup& nccl, const SymbolLookup& cudart);

// --pairs needs ncclCommSplit (NCCL 2.18); `library_version` is ncclGetVersion's code.
Result<void> check_split(const Api& a, int library_version);
// "2.17.1" from ncclGetVersion's code.
std::string nccl_version_text(int code);

// Loads libnccl and libcudart once. kNotBuilt (with a hint) when either is missing or
// lacks an entry point.
Result<const Api*> api();

// The one translation of each convention. `comm` adds ncclGetLastError's text.
Result<void> check(const Api& a, ncclResult_t rc, const char* operation, ncclComm_t comm = nullptr);
Result<void> check(const Api& a, cudaError_t rc, const char* operation);

// The NCCL enums for our types and operations (mulsum has none: its operation is made per
// call with ncclRedOpCreatePreMulSum).
ncclDataType_t nccl_type(DataType t);
ncclRedOp_t nccl_op(ReduceOp op);

} // namespace fabric::nccltest::nccl
