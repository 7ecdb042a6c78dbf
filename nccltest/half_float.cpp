#include "nccltest/half_float.h"

#include <bit>
#include <cmath>

namespace fabric::nccltest {

uint16_t float_to_half(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t exponent = (f >> 23) & 0xffu;
  uint32_t mantissa = f & 0x7fffffu;
  if (exponent == 0xff) { // infinity or NaN (keep NaN a NaN)
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0));
  }
  const int unbiased = static_cast<int>(exponent) - 127;
  if (unbiased > 15) return static_cast<uint16_t>(sign | 0x7c00u); // overflow: infinity
  if (unbiased >= -14) {                                           // normal half
    uint32_t half_exp = static_cast<uint32_t>(unbiased + 15);
    uint32_t result = (half_exp << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1fffu;                                 // the 13 bits dropped
    if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result; // may carry into exp
    return static_cast<uint16_t>(sign | result);
  }
  if (unbiased < -25) return static_cast<uint16_t>(sign); // underflow: signed zero
  // Subnormal half: shift the mantissa (with its implicit 1) into place, rounding.
  mantissa |= 0x800000u;
  const int shift = -unbiased - 14 + 13; // 14..24
  uint32_t result = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) {
    return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  }
  // Zero or subnormal: mantissa x 2^-24.
  float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  return sign ? -magnitude : magnitude;
}

uint16_t float_to_bfloat16(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7f800000u) == 0x7f800000u && (f & 0x7fffffu)) {
    return static_cast<uint16_t>((f >> 16) | 0x40u); // quiet NaN
  }
  // Round to nearest even on the 16 bits dropped.
  f += 0x7fffu + ((f >> 16) & 1u);
  return static_cast<uint16_t>(f >> 16);
}

float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

} // namespace fabric::nccltest
