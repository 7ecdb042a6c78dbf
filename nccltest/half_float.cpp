#include "nccltest/half_float.h"

#include <algorithm>
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

namespace {

// One fp8 format: mantissa bits, exponent bias, the largest finite encoding and a NaN.
// E5M2 keeps IEEE's infinities (all-ones exponent, mantissa 0); E4M3's only NaN is 0x7f.
struct Fp8Format {
  int mantissa_bits;
  int bias;
  uint8_t max_finite; // magnitude bits
  uint8_t nan;        // magnitude bits
  bool has_infinity;
};
constexpr Fp8Format kE4m3{3, 7, 0x7e, 0x7f, false};
constexpr Fp8Format kE5m2{2, 15, 0x7b, 0x7f, true};

double fp8_decode(const Fp8Format& f, uint8_t bits) {
  const bool negative = (bits & 0x80u) != 0;
  const int magnitude = bits & 0x7f;
  const int exponent = magnitude >> f.mantissa_bits;
  const int mantissa = magnitude & ((1 << f.mantissa_bits) - 1);
  double value = 0;
  if (magnitude > f.max_finite) {
    value = f.has_infinity && mantissa == 0 ? HUGE_VAL : std::nan("");
  } else if (exponent == 0) {
    value = std::ldexp(mantissa, 1 - f.bias - f.mantissa_bits);
  } else {
    value = std::ldexp(mantissa + (1 << f.mantissa_bits), exponent - f.bias - f.mantissa_bits);
  }
  return negative ? -value : value;
}

uint8_t fp8_encode(const Fp8Format& f, double value) {
  const uint8_t sign = std::signbit(value) ? 0x80u : 0;
  if (std::isnan(value)) return static_cast<uint8_t>(sign | f.nan);
  const double a = std::fabs(value);
  if (a >= fp8_decode(f, f.max_finite)) return static_cast<uint8_t>(sign | f.max_finite);
  if (a == 0) return sign;
  int exponent = std::ilogb(a);
  const int min_exponent = 1 - f.bias;
  // Below the smallest normal the step is fixed (subnormals); a carry of the rounding into
  // the next binade shows up as a mantissa of 2^bits, which the encoding absorbs.
  const int step = std::max(exponent, min_exponent) - f.mantissa_bits;
  const auto q = static_cast<int>(std::nearbyint(std::ldexp(a, -step)));
  int bits = 0;
  if (exponent < min_exponent) {
    bits = q; // a subnormal, or the smallest normal after rounding up
  } else {
    bits = ((exponent + f.bias) << f.mantissa_bits) + (q - (1 << f.mantissa_bits));
  }
  return static_cast<uint8_t>(sign | std::min<int>(bits, f.max_finite));
}

} // namespace

uint8_t double_to_fp8e4m3(double value) {
  return fp8_encode(kE4m3, value);
}
double fp8e4m3_to_double(uint8_t bits) {
  return fp8_decode(kE4m3, bits);
}
uint8_t double_to_fp8e5m2(double value) {
  return fp8_encode(kE5m2, value);
}
double fp8e5m2_to_double(uint8_t bits) {
  return fp8_decode(kE5m2, bits);
}

} // namespace fabric::nccltest
