// IEEE 754 binary16 ("half") and bfloat16 on the host, as bit patterns: the nccl backend
// fills and reads GPU buffers of these types from host memory, where C++20 has no type
// for them.
#pragma once

#include <cstdint>

namespace fabric::nccltest {

// Round to nearest, ties to even; overflow gives infinity, NaN stays NaN.
uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);

} // namespace fabric::nccltest
