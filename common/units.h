// Units: sizes, durations and rates, parsed from user input with errors that name the
// argument, and formatted for people. Base units everywhere inside: bytes and seconds.
//
// Message sizes are binary (64K = 65536, as perftest and every RDMA tool use them);
// bandwidth is decimal (1 Gb/s = 1e9 bit/s, as link speeds are quoted).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fabric::units {

// "65536", "64K", "64k", "64KiB", "1M", "2G" -> bytes. `what` names the argument in errors.
Result<uint64_t> parse_size(std::string_view text, std::string_view what);
// "250ms", "10s", "2m", "1.5s", "300us"; a bare number is seconds.
Result<std::chrono::nanoseconds> parse_duration(std::string_view text, std::string_view what);
// A plain unsigned integer within [min, max].
Result<uint64_t> parse_uint(std::string_view text, std::string_view what, uint64_t min = 0,
                            uint64_t max = UINT64_MAX);
// A finite number greater than 0: "2.5", "1e3" (thresholds, factors).
Result<double> parse_positive(std::string_view text, std::string_view what);

// 65536 -> "64 KiB", 1536 -> "1.5 KiB", 100 -> "100 B".
std::string format_size(uint64_t bytes);

inline double bits_per_second_to_gbps(double bps) {
  return bps / 1e9;
}
inline double bytes_per_second_to_gbps(double bytes_per_s) {
  return bytes_per_s * 8.0 / 1e9;
}
inline double bytes_per_second_to_gbytes(double bytes_per_s) {
  return bytes_per_s / 1e9;
}
inline double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

} // namespace fabric::units
