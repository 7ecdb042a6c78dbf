#include "nccltest/check_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nccltest/half_float.h"

namespace fabric::nccltest {
namespace {

// The largest integer magnitude every value up to which the type holds exactly.
double exact_limit(DataType t) {
  switch (t) {
  case DataType::kHalf: return 2048;
  case DataType::kBfloat16: return 256;
  case DataType::kFloat: return 16777216.0;
  case DataType::kDouble: return 9007199254740992.0;
  case DataType::kInt32: return 2147483647.0;
  case DataType::kInt64: return 4503599627370496.0; // kept within double's exact range
  }
  return 256;
}

bool is_reduction(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

double unit_roundoff(DataType t) {
  switch (t) {
  case DataType::kHalf: return std::ldexp(1.0, -10);
  case DataType::kBfloat16: return std::ldexp(1.0, -7);
  case DataType::kFloat: return std::ldexp(1.0, -23);
  case DataType::kDouble: return std::ldexp(1.0, -52);
  default: return 0;
  }
}

template <typename T> T to_storage(double v) {
  return static_cast<T>(v);
}
template <typename T> double from_storage(T v) {
  return static_cast<double>(v);
}

struct Half {
  uint16_t bits;
};
struct Bf16 {
  uint16_t bits;
};
template <> Half to_storage<Half>(double v) {
  return {float_to_half(static_cast<float>(v))};
}
template <> double from_storage<Half>(Half v) {
  return half_to_float(v.bits);
}
template <> Bf16 to_storage<Bf16>(double v) {
  return {float_to_bfloat16(static_cast<float>(v))};
}
template <> double from_storage<Bf16>(Bf16 v) {
  return bfloat16_to_float(v.bits);
}

template <typename T>
void fill_typed(const CheckSpec& spec, std::span<std::byte> input, std::size_t first) {
  const check_math::Params p = make_params(spec);
  const std::size_t end = std::min(spec.counts.send, first + input.size() / sizeof(T));
  std::byte* out = input.data();
  const auto rank = static_cast<uint64_t>(spec.rank);
  for (std::size_t i = first; i < end; ++i) {
    T v = to_storage<T>(check_math::value(p, rank, i));
    std::memcpy(out + (i - first) * sizeof(T), &v, sizeof(T));
  }
}

template <typename T>
CheckOutcome verify_typed(const CheckSpec& spec, std::span<const std::byte> output,
                          std::size_t first) {
  const check_math::Params p = make_params(spec);
  CheckOutcome outcome;
  if (!check_math::output_defined(p)) return outcome;
  const std::size_t end = std::min(spec.counts.recv, first + output.size() / sizeof(T));
  const std::byte* in = output.data();
  for (std::size_t i = first; i < end; ++i) {
    // What the expected value is once stored in T (exact for every value generated).
    const double want = from_storage<T>(to_storage<T>(check_math::expected(p, i)));
    T raw;
    std::memcpy(&raw, in + (i - first) * sizeof(T), sizeof(T));
    const double got = from_storage<T>(raw);
    ++outcome.checked;
    if (!check_math::matches(got, want, p.tolerance)) {
      if (outcome.wrong == 0) {
        outcome.first_index = i;
        outcome.first_got = got;
        outcome.first_expected = want;
      }
      ++outcome.wrong;
    }
  }
  return outcome;
}

template <typename T> double stored_typed(double v) {
  return from_storage<T>(to_storage<T>(v));
}

template <typename T> double read_typed(std::span<const std::byte> element) {
  T raw;
  std::memcpy(&raw, element.data(), std::min(sizeof(T), element.size()));
  return from_storage<T>(raw);
}

} // namespace

check_math::Params make_params(const CheckSpec& spec) {
  check_math::Params p;
  p.seed = spec.seed;
  p.nranks = static_cast<uint64_t>(std::max(spec.nranks, 1));
  p.param = spec.counts.param;
  p.rank = spec.rank;
  p.root = spec.root;
  p.collective = spec.collective;
  p.op = spec.op;
  p.reduce = is_reduction(spec.collective) ? 1 : 0;
  const double limit = exact_limit(spec.type);
  // Values that are only moved (or compared, for min and max) can use most of the type's
  // exact range, so a misplaced element is almost never equal by chance.
  p.spread = static_cast<int64_t>(std::min(limit / 2 - 1, 1048576.0));
  if (p.reduce && spec.op == ReduceOp::kSum) {
    p.spread = static_cast<int64_t>(std::min(1000.0, std::floor((limit - 1) / spec.nranks)));
  } else if (p.reduce && spec.op == ReduceOp::kAvg) {
    p.spread = static_cast<int64_t>(std::min(1000.0, std::floor(limit / spec.nranks) - 1));
    if (is_floating(spec.type)) {
      p.tolerance = std::min(0.5, static_cast<double>(std::max<int64_t>(p.spread, 0) + 1) *
                                      spec.nranks * unit_roundoff(spec.type) * 2);
    }
  }
  return p;
}

double input_value(const CheckSpec& spec, int rank, std::size_t index) {
  return check_math::value(make_params(spec), static_cast<uint64_t>(rank), index);
}

void fill_input(const CheckSpec& spec, std::span<std::byte> input, std::size_t first) {
  switch (spec.type) {
  case DataType::kFloat: return fill_typed<float>(spec, input, first);
  case DataType::kDouble: return fill_typed<double>(spec, input, first);
  case DataType::kInt32: return fill_typed<int32_t>(spec, input, first);
  case DataType::kInt64: return fill_typed<int64_t>(spec, input, first);
  case DataType::kHalf: return fill_typed<Half>(spec, input, first);
  case DataType::kBfloat16: return fill_typed<Bf16>(spec, input, first);
  }
}

CheckOutcome verify_output(const CheckSpec& spec, std::span<const std::byte> output,
                           std::size_t first) {
  switch (spec.type) {
  case DataType::kFloat: return verify_typed<float>(spec, output, first);
  case DataType::kDouble: return verify_typed<double>(spec, output, first);
  case DataType::kInt32: return verify_typed<int32_t>(spec, output, first);
  case DataType::kInt64: return verify_typed<int64_t>(spec, output, first);
  case DataType::kHalf: return verify_typed<Half>(spec, output, first);
  case DataType::kBfloat16: return verify_typed<Bf16>(spec, output, first);
  }
  return {};
}

void merge_outcome(CheckOutcome& total, const CheckOutcome& chunk) {
  if (total.wrong == 0 && chunk.wrong > 0) {
    total.first_index = chunk.first_index;
    total.first_got = chunk.first_got;
    total.first_expected = chunk.first_expected;
  }
  total.checked += chunk.checked;
  total.wrong += chunk.wrong;
}

double expected_output(const CheckSpec& spec, std::size_t index) {
  const double want = check_math::expected(make_params(spec), index);
  switch (spec.type) {
  case DataType::kFloat: return stored_typed<float>(want);
  case DataType::kDouble: return stored_typed<double>(want);
  case DataType::kInt32: return stored_typed<int32_t>(want);
  case DataType::kInt64: return stored_typed<int64_t>(want);
  case DataType::kHalf: return stored_typed<Half>(want);
  case DataType::kBfloat16: return stored_typed<Bf16>(want);
  }
  return want;
}

double stored_value(DataType type, std::span<const std::byte> element) {
  switch (type) {
  case DataType::kFloat: return read_typed<float>(element);
  case DataType::kDouble: return read_typed<double>(element);
  case DataType::kInt32: return read_typed<int32_t>(element);
  case DataType::kInt64: return read_typed<int64_t>(element);
  case DataType::kHalf: return read_typed<Half>(element);
  case DataType::kBfloat16: return read_typed<Bf16>(element);
  }
  return 0;
}

} // namespace fabric::nccltest
