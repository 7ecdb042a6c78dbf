#include "nccltest/sizes.h"

namespace fabric::nccltest {
namespace {

// The size after `size`, or false when it would not fit in a size_t.
bool next_size(const SizeSweep& sweep, std::size_t size, std::size_t& next) {
  constexpr std::size_t kMax = static_cast<std::size_t>(-1);
  if (sweep.step_factor > 1) {
    if (size > kMax / sweep.step_factor) return false;
    next = size * sweep.step_factor;
  } else {
    if (size > kMax - sweep.step_bytes) return false;
    next = size + sweep.step_bytes;
  }
  return next > size;
}

} // namespace

std::vector<std::size_t> sweep_sizes(const SizeSweep& sweep) {
  std::vector<std::size_t> sizes;
  for (std::size_t size = sweep.min_bytes; size <= sweep.max_bytes;) {
    sizes.push_back(size);
    std::size_t next = 0;
    if (!next_size(sweep, size, next)) break;
    size = next;
  }
  return sizes;
}

std::vector<std::size_t> warmup_sizes(const SizeSweep& sweep) {
  std::vector<std::size_t> sizes;
  for (std::size_t size = sweep.min_bytes; size <= sweep.max_bytes; size *= 2) {
    sizes.push_back(size);
    if (size == 0 || size > sweep.max_bytes / 2) break; // -b 0: warm up once, at 0 bytes
  }
  return sizes;
}

Result<void> validate_sweep(const SizeSweep& sweep, std::size_t max_sizes) {
  if (sweep.min_bytes > sweep.max_bytes) {
    return Error(ErrorCode::kInvalidArgument, "-b/--minbytes",
                 std::to_string(sweep.min_bytes) + " is above -e/--maxbytes " +
                     std::to_string(sweep.max_bytes));
  }
  if (sweep.step_factor > 1 && sweep.min_bytes == 0 && sweep.max_bytes > 0) {
    return Error(ErrorCode::kInvalidArgument, "-b/--minbytes",
                 "0 never grows with -f/--stepfactor " + std::to_string(sweep.step_factor) +
                     "; start at 1 or more");
  }
  if (sweep.step_factor <= 1 && sweep.step_bytes == 0 && sweep.min_bytes < sweep.max_bytes) {
    return Error(ErrorCode::kInvalidArgument, "-i/--stepbytes",
                 "0 never reaches -e/--maxbytes; give a step above 0, or -f 2");
  }
  std::size_t steps = 0;
  for (std::size_t size = sweep.min_bytes; size <= sweep.max_bytes;) {
    if (++steps > max_sizes) {
      return Error(ErrorCode::kInvalidArgument, "-i/--stepbytes",
                   std::to_string(sweep.step_bytes) + " makes more than " +
                       std::to_string(max_sizes) + " sizes from -b to -e");
    }
    std::size_t next = 0;
    if (!next_size(sweep, size, next)) break;
    size = next;
  }
  return Ok();
}

std::vector<RoundedSize> rounded_sizes(const std::vector<std::size_t>& sizes, Collective c,
                                       DataType t, int nranks) {
  std::vector<RoundedSize> out;
  const std::size_t elt = data_type_size(t);
  for (std::size_t size : sizes) {
    std::size_t used = collective_counts(c, size, elt, nranks).printed_bytes(elt);
    if (used != size) out.push_back({size, used});
  }
  return out;
}

std::string describe_rounding(const std::vector<RoundedSize>& rounded, Collective c, DataType t,
                              int nranks, std::size_t max_listed) {
  if (rounded.empty()) return "";
  std::string unit;
  const std::size_t elt = data_type_size(t);
  if (c == Collective::kAllGather || c == Collective::kReduceScatter ||
      c == Collective::kAllToAll) {
    unit = "whole 16-byte blocks per rank for " + std::string(collective_name(c)) + " over " +
           std::to_string(nranks) + " ranks";
  } else {
    unit = "whole " + std::to_string(elt) + "-byte " + std::string(data_type_name(t)) + " elements";
  }
  std::string text = "sizes rounded as nccl-tests does (" + unit + "):";
  for (std::size_t i = 0; i < rounded.size() && i < max_listed; ++i) {
    text += (i ? ", " : " ") + std::to_string(rounded[i].requested) + " -> " +
            std::to_string(rounded[i].used);
  }
  if (rounded.size() > max_listed) {
    text += " and " + std::to_string(rounded.size() - max_listed) + " more";
  }
  return text;
}

} // namespace fabric::nccltest
