#include "nccltest/check_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nccltest/half_float.h"

namespace fabric::nccltest {
namespace {

uint64_t mix(uint64_t x) { // splitmix64's finaliser: cheap, and every input bit matters
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

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

// Everything about a spec that does not change per element.
class Generator {
public:
  explicit Generator(const CheckSpec& spec)
      : spec_(spec), n_(static_cast<uint64_t>(spec.nranks)),
        reduce_(is_reduction(spec.collective)) {
    const double limit = exact_limit(spec.type);
    // Values that are only moved (or compared, for min and max) can use most of the
    // type's exact range, so a misplaced element is almost never equal by chance.
    spread_ = static_cast<int64_t>(std::min(limit / 2 - 1, 1048576.0));
    if (reduce_ && spec.op == ReduceOp::kSum) {
      spread_ = static_cast<int64_t>(std::min(1000.0, std::floor((limit - 1) / spec.nranks)));
    } else if (reduce_ && spec.op == ReduceOp::kAvg) {
      spread_ = static_cast<int64_t>(std::min(1000.0, std::floor(limit / spec.nranks) - 1));
      if (is_floating(spec.type)) {
        tolerance_ = std::min(0.5, static_cast<double>(std::max<int64_t>(spread_, 0) + 1) *
                                       spec.nranks * unit_roundoff(spec.type) * 2);
      }
    }
  }

  double value(int rank, std::size_t index) const {
    const uint64_t key = mix(spec_.seed * 0x2545f4914f6cdd1dull + index);
    const auto r = static_cast<uint64_t>(rank);
    if (reduce_ && spec_.op == ReduceOp::kProd) {
      if ((key + r) % n_ == 0) return 2;
      return (mix(key ^ (r + 1)) & 3u) == 0 ? -1 : 1;
    }
    if (reduce_ && spec_.op == ReduceOp::kAvg) {
      // A per-element value plus a per-rank offset that cancels over the ranks, so the
      // average is exactly that value.
      double base = spread_ >= 0 ? uniform(key, spread_) : 0;
      bool paired = r < n_ - n_ % 2;
      return base + (paired ? (r % 2 == 0 ? 1 : -1) : 0);
    }
    if (reduce_ && spec_.op == ReduceOp::kSum && spread_ < 1) {
      return (key + r) % n_ == 0 ? 1 : 0; // too many ranks for more: one rank adds 1
    }
    return uniform(mix(key + r * 0x632be59bd9b4e019ull), spread_);
  }

  double reduced(std::size_t index) const {
    double acc = value(0, index);
    for (int r = 1; r < spec_.nranks; ++r) {
      double v = value(r, index);
      switch (spec_.op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += v; break;
      case ReduceOp::kProd: acc *= v; break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      }
    }
    return spec_.op == ReduceOp::kAvg ? acc / spec_.nranks : acc;
  }

  // The value output element `i` of this rank must hold; false when it is not defined.
  bool expected(std::size_t i, double& out) const {
    const std::size_t param = spec_.counts.param;
    const int n = spec_.nranks;
    switch (spec_.collective) {
    case Collective::kAllReduce: out = reduced(i); return true;
    case Collective::kReduceScatter: out = reduced(spec_.rank * param + i); return true;
    case Collective::kReduce:
      if (spec_.rank != spec_.root) return false;
      out = reduced(i);
      return true;
    case Collective::kAllGather: out = value(static_cast<int>(i / param), i % param); return true;
    case Collective::kAllToAll:
      out = value(static_cast<int>(i / param), spec_.rank * param + i % param);
      return true;
    case Collective::kBroadcast: out = value(spec_.root, i); return true;
    case Collective::kSendRecv: out = value((spec_.rank - 1 + n) % n, i); return true;
    }
    return false;
  }

  double tolerance() const { return tolerance_; }

private:
  static double uniform(uint64_t bits, int64_t spread) {
    return static_cast<double>(static_cast<int64_t>(bits % static_cast<uint64_t>(2 * spread + 1)) -
                               spread);
  }

  const CheckSpec& spec_;
  uint64_t n_;
  bool reduce_;
  int64_t spread_ = 0;
  double tolerance_ = 0;
};

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

template <typename T> void fill_typed(const CheckSpec& spec, std::span<std::byte> input) {
  Generator gen(spec);
  const std::size_t count = std::min(spec.counts.send, input.size() / sizeof(T));
  std::byte* out = input.data();
  for (std::size_t i = 0; i < count; ++i) {
    T v = to_storage<T>(gen.value(spec.rank, i));
    std::memcpy(out + i * sizeof(T), &v, sizeof(T));
  }
}

template <typename T>
CheckOutcome verify_typed(const CheckSpec& spec, std::span<const std::byte> output) {
  Generator gen(spec);
  CheckOutcome outcome;
  const std::size_t count = std::min(spec.counts.recv, output.size() / sizeof(T));
  const double tolerance = gen.tolerance();
  const std::byte* in = output.data();
  for (std::size_t i = 0; i < count; ++i) {
    double want = 0;
    if (!gen.expected(i, want)) break;
    // What the expected value is once stored in T (exact for every value generated).
    want = from_storage<T>(to_storage<T>(want));
    T raw;
    std::memcpy(&raw, in + i * sizeof(T), sizeof(T));
    double got = from_storage<T>(raw);
    ++outcome.checked;
    bool ok = tolerance == 0 ? got == want : std::fabs(got - want) <= tolerance;
    if (!ok) {
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

} // namespace

double input_value(const CheckSpec& spec, int rank, std::size_t index) {
  return Generator(spec).value(rank, index);
}

void fill_input(const CheckSpec& spec, std::span<std::byte> input) {
  switch (spec.type) {
  case DataType::kFloat: return fill_typed<float>(spec, input);
  case DataType::kDouble: return fill_typed<double>(spec, input);
  case DataType::kInt32: return fill_typed<int32_t>(spec, input);
  case DataType::kInt64: return fill_typed<int64_t>(spec, input);
  case DataType::kHalf: return fill_typed<Half>(spec, input);
  case DataType::kBfloat16: return fill_typed<Bf16>(spec, input);
  }
}

CheckOutcome verify_output(const CheckSpec& spec, std::span<const std::byte> output) {
  switch (spec.type) {
  case DataType::kFloat: return verify_typed<float>(spec, output);
  case DataType::kDouble: return verify_typed<double>(spec, output);
  case DataType::kInt32: return verify_typed<int32_t>(spec, output);
  case DataType::kInt64: return verify_typed<int64_t>(spec, output);
  case DataType::kHalf: return verify_typed<Half>(spec, output);
  case DataType::kBfloat16: return verify_typed<Bf16>(spec, output);
  }
  return {};
}

} // namespace fabric::nccltest
