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
  case DataType::kInt64:
  case DataType::kUint64: return 4503599627370496.0; // kept within double's exact range
  case DataType::kInt8: return 127;
  case DataType::kUint8: return 255;
  case DataType::kUint32: return 4294967295.0;
  case DataType::kFloat8e4m3: return 16;
  case DataType::kFloat8e5m2: return 8;
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
  case DataType::kFloat8e4m3: return std::ldexp(1.0, -3);
  case DataType::kFloat8e5m2: return std::ldexp(1.0, -2);
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
struct F8e4m3 {
  uint8_t bits;
};
struct F8e5m2 {
  uint8_t bits;
};
template <> F8e4m3 to_storage<F8e4m3>(double v) {
  return {double_to_fp8e4m3(v)};
}
template <> double from_storage<F8e4m3>(F8e4m3 v) {
  return fp8e4m3_to_double(v.bits);
}
template <> F8e5m2 to_storage<F8e5m2>(double v) {
  return {double_to_fp8e5m2(v)};
}
template <> double from_storage<F8e5m2>(F8e5m2 v) {
  return fp8e5m2_to_double(v.bits);
}

// Calls visit.template operator()<T>() with T the storage type of `type`.
template <typename Visit> decltype(auto) with_storage_type(DataType type, Visit&& visit) {
  switch (type) {
  case DataType::kFloat: return visit.template operator()<float>();
  case DataType::kDouble: return visit.template operator()<double>();
  case DataType::kInt32: return visit.template operator()<int32_t>();
  case DataType::kInt64: return visit.template operator()<int64_t>();
  case DataType::kHalf: return visit.template operator()<Half>();
  case DataType::kBfloat16: return visit.template operator()<Bf16>();
  case DataType::kInt8: return visit.template operator()<int8_t>();
  case DataType::kUint8: return visit.template operator()<uint8_t>();
  case DataType::kUint32: return visit.template operator()<uint32_t>();
  case DataType::kUint64: return visit.template operator()<uint64_t>();
  case DataType::kFloat8e4m3: return visit.template operator()<F8e4m3>();
  case DataType::kFloat8e5m2: return visit.template operator()<F8e5m2>();
  }
  return visit.template operator()<float>();
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
  p.unsigned_values = is_unsigned(spec.type) ? 1 : 0;
  // An unsigned type holds [0, limit]: values are drawn from [-spread, spread] and lifted
  // by an offset, so every spread below is halved to keep the results within the limit.
  const double limit = exact_limit(spec.type);
  const double lifted = p.unsigned_values ? 2.0 : 1.0;
  // Values that are only moved (or compared, for min and max) can use most of the type's
  // exact range, so a misplaced element is almost never equal by chance.
  p.spread = static_cast<int64_t>(std::min(limit / 2 - 1, 1048576.0));
  if (p.reduce && (spec.op == ReduceOp::kSum || spec.op == ReduceOp::kMulSum)) {
    // mulsum scales each rank's value by up to 2 (check_math::premul_scalar).
    const double scale = spec.op == ReduceOp::kMulSum ? 2.0 : 1.0;
    p.spread = static_cast<int64_t>(
        std::min(1000.0, std::floor((limit - 1) / (spec.nranks * lifted * scale))));
    if (p.unsigned_values && p.spread >= 1) p.offset = p.spread;
  } else if (p.reduce && spec.op == ReduceOp::kAvg) {
    p.spread =
        static_cast<int64_t>(std::min(1000.0, std::floor(limit / (spec.nranks * lifted)) - 1));
    // The per-rank +-1 that cancels over the ranks needs one more.
    if (p.unsigned_values) p.offset = std::max<int64_t>(p.spread, 0) + 1;
    if (is_floating(spec.type)) {
      p.tolerance = std::min(0.5, static_cast<double>(std::max<int64_t>(p.spread, 0) + 1) *
                                      spec.nranks * unit_roundoff(spec.type) * 2);
    }
  } else if (p.unsigned_values && !(p.reduce && spec.op == ReduceOp::kProd)) {
    p.offset = p.spread;
  }
  return p;
}

double input_value(const CheckSpec& spec, int rank, std::size_t index) {
  return check_math::value(make_params(spec), static_cast<uint64_t>(rank), index);
}

void fill_input(const CheckSpec& spec, std::span<std::byte> input, std::size_t first) {
  with_storage_type(spec.type, [&]<typename T>() { fill_typed<T>(spec, input, first); });
}

CheckOutcome verify_output(const CheckSpec& spec, std::span<const std::byte> output,
                           std::size_t first) {
  return with_storage_type(spec.type,
                           [&]<typename T>() { return verify_typed<T>(spec, output, first); });
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
  return with_storage_type(spec.type, [&]<typename T>() { return stored_typed<T>(want); });
}

double stored_value(DataType type, std::span<const std::byte> element) {
  return with_storage_type(type, [&]<typename T>() { return read_typed<T>(element); });
}

std::array<std::byte, 8> stored_bytes(DataType type, double value) {
  std::array<std::byte, 8> bytes{};
  with_storage_type(type, [&]<typename T>() {
    const T v = to_storage<T>(value);
    std::memcpy(bytes.data(), &v, sizeof(T));
  });
  return bytes;
}

} // namespace fabric::nccltest
