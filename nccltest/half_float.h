// IEEE 754 binary16 ("half"), bfloat16 and the two OCP fp8 formats (E4M3, E5M2) on the
// host, as bit patterns: the nccl backend fills and reads GPU buffers of these types from
// host memory, where C++20 has no type for them.
#pragma once

#include <cstdint>

namespace fabric::nccltest {

// Round to nearest, ties to even; overflow gives infinity, NaN stays NaN.
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);
// fp8 as CUDA's __nv_fp8_e4m3 / __nv_fp8_e5m2 convert (__NV_SATFINITE): round to nearest,
// ties to even; beyond the largest finite value (448, 57344) the result saturates to it.
uint8_t double_to_fp8e4m3(double value);
double fp8e4m3_to_double(uint8_t bits);
uint8_t double_to_fp8e5m2(double value);
double fp8e5m2_to_double(uint8_t bits);

} // namespace fabric::nccltest
