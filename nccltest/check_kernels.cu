// The checks' device kernels: generate this rank's input and compare its output with the
// expected values where the data lives, as nccl-tests does, with the arithmetic the host
// uses (check_math.h). Built with nvcc into a fatbin that the binary embeds and loads with
// the CUDA driver API (device_checks.cpp), so that a node without CUDA still runs the rest.
//
// Each kernel walks its elements with a grid-stride loop; verification counts wrong
// elements per thread, adds them once per thread, and keeps the smallest wrong index.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "nccltest/check_math.h"

namespace cm = fabric::nccltest::check_math;
using fabric::nccltest::DataType;

namespace {

template <typename T> __device__ T to_storage(double v) {
  return static_cast<T>(v);
}
template <> __device__ __half to_storage<__half>(double v) {
  return __float2half_rn(static_cast<float>(v));
}
template <> __device__ __nv_bfloat16 to_storage<__nv_bfloat16>(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}
// CUDA's fp8 conversions, saturating to the largest finite value as the host's do.
template <> __device__ __nv_fp8_e4m3 to_storage<__nv_fp8_e4m3>(double v) {
  return __nv_fp8_e4m3(v);
}
template <> __device__ __nv_fp8_e5m2 to_storage<__nv_fp8_e5m2>(double v) {
  return __nv_fp8_e5m2(v);
}
template <typename T> __device__ double from_storage(T v) {
  return static_cast<double>(v);
}
template <> __device__ double from_storage<__nv_fp8_e4m3>(__nv_fp8_e4m3 v) {
  return static_cast<double>(static_cast<float>(v));
}
template <> __device__ double from_storage<__nv_fp8_e5m2>(__nv_fp8_e5m2 v) {
  return static_cast<double>(static_cast<float>(v));
}
template <> __device__ double from_storage<__half>(__half v) {
  return static_cast<double>(__half2float(v));
}
template <> __device__ double from_storage<__nv_bfloat16>(__nv_bfloat16 v) {
  return static_cast<double>(__bfloat162float(v));
}

template <typename T>
__device__ void fill_typed(const cm::Params& p, void* data, uint64_t first, uint64_t count) {
  T* out = static_cast<T*>(data);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t rank = static_cast<uint64_t>(p.rank);
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = to_storage<T>(cm::value(p, rank, first + i));
  }
}

template <typename T>
__device__ void verify_typed(const cm::Params& p, const void* data, uint64_t first, uint64_t count,
                             unsigned long long* result) {
  const T* in = static_cast<const T*>(data);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  unsigned long long wrong = 0, first_wrong = ~0ull;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const double want = from_storage<T>(to_storage<T>(cm::expected(p, first + i)));
    if (!cm::matches(from_storage<T>(in[i]), want, p.tolerance)) {
      if (wrong == 0) first_wrong = first + i;
      ++wrong;
    }
  }
  if (wrong != 0) {
    atomicAdd(&result[0], wrong);
    atomicMin(&result[1], first_wrong);
  }
}

} // namespace

// `data` holds elements [first, first + count) of this rank's input (fill) or output
// (verify); result[0] counts wrong elements and result[1] keeps the first wrong index.
extern "C" __global__ void fabric_check_fill(cm::Params p, int type, void* data, uint64_t first,
                                             uint64_t count) {
  switch (static_cast<DataType>(type)) {
  case DataType::kFloat: return fill_typed<float>(p, data, first, count);
  case DataType::kDouble: return fill_typed<double>(p, data, first, count);
  case DataType::kInt32: return fill_typed<int32_t>(p, data, first, count);
  case DataType::kInt64: return fill_typed<int64_t>(p, data, first, count);
  case DataType::kHalf: return fill_typed<__half>(p, data, first, count);
  case DataType::kBfloat16: return fill_typed<__nv_bfloat16>(p, data, first, count);
  case DataType::kInt8: return fill_typed<int8_t>(p, data, first, count);
  case DataType::kUint8: return fill_typed<uint8_t>(p, data, first, count);
  case DataType::kUint32: return fill_typed<uint32_t>(p, data, first, count);
  case DataType::kUint64: return fill_typed<uint64_t>(p, data, first, count);
  case DataType::kFloat8e4m3: return fill_typed<__nv_fp8_e4m3>(p, data, first, count);
  case DataType::kFloat8e5m2: return fill_typed<__nv_fp8_e5m2>(p, data, first, count);
  }
}

extern "C" __global__ void fabric_check_verify(cm::Params p, int type, const void* data,
                                               uint64_t first, uint64_t count,
                                               unsigned long long* result) {
  switch (static_cast<DataType>(type)) {
  case DataType::kFloat: return verify_typed<float>(p, data, first, count, result);
  case DataType::kDouble: return verify_typed<double>(p, data, first, count, result);
  case DataType::kInt32: return verify_typed<int32_t>(p, data, first, count, result);
  case DataType::kInt64: return verify_typed<int64_t>(p, data, first, count, result);
  case DataType::kHalf: return verify_typed<__half>(p, data, first, count, result);
  case DataType::kBfloat16: return verify_typed<__nv_bfloat16>(p, data, first, count, result);
  case DataType::kInt8: return verify_typed<int8_t>(p, data, first, count, result);
  case DataType::kUint8: return verify_typed<uint8_t>(p, data, first, count, result);
  case DataType::kUint32: return verify_typed<uint32_t>(p, data, first, count, result);
  case DataType::kUint64: return verify_typed<uint64_t>(p, data, first, count, result);
  case DataType::kFloat8e4m3: return verify_typed<__nv_fp8_e4m3>(p, data, first, count, result);
  case DataType::kFloat8e5m2: return verify_typed<__nv_fp8_e5m2>(p, data, first, count, result);
  }
}
