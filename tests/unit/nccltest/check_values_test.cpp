// Check values: every rank's input is predictable, every reduction exact, and a host model
// of each collective (what the ranks' buffers hold afterwards) verifies clean, while one
// wrong element is caught and located.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "nccltest/check_values.h"
#include "nccltest/half_float.h"

namespace fabric::nccltest {
namespace {

using Bytes = std::vector<std::byte>;

CheckSpec spec_of(Collective c, DataType t, ReduceOp op, int n, int rank, std::size_t bytes) {
  CheckSpec s;
  s.collective = c;
  s.type = t;
  s.op = op;
  s.root = n > 1 ? 1 : 0;
  s.nranks = n;
  s.rank = rank;
  s.seed = 7;
  s.counts = collective_counts(c, bytes, data_type_size(t), n);
  return s;
}

template <typename T> double load_as(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}
template <typename T> void store_as(std::byte* p, double v) {
  const T x = static_cast<T>(v);
  std::memcpy(p, &x, sizeof x);
}

// Reads element i of a buffer of type t as a double.
double element(const Bytes& b, DataType t, std::size_t i) {
  const std::byte* p = b.data() + i * data_type_size(t);
  switch (t) {
  case DataType::kFloat: return load_as<float>(p);
  case DataType::kDouble: return load_as<double>(p);
  case DataType::kInt8: return load_as<int8_t>(p);
  case DataType::kUint8: return load_as<uint8_t>(p);
  case DataType::kInt32: return load_as<int32_t>(p);
  case DataType::kUint32: return load_as<uint32_t>(p);
  case DataType::kInt64: return load_as<int64_t>(p);
  case DataType::kUint64: return load_as<uint64_t>(p);
  case DataType::kHalf: return half_to_float(static_cast<uint16_t>(load_as<uint16_t>(p)));
  case DataType::kBfloat16: return bfloat16_to_float(static_cast<uint16_t>(load_as<uint16_t>(p)));
  case DataType::kFloat8e4m3: return fp8e4m3_to_double(static_cast<uint8_t>(load_as<uint8_t>(p)));
  case DataType::kFloat8e5m2: return fp8e5m2_to_double(static_cast<uint8_t>(load_as<uint8_t>(p)));
  }
  return 0;
}

void store(Bytes& b, DataType t, std::size_t i, double v) {
  std::byte* p = b.data() + i * data_type_size(t);
  switch (t) {
  case DataType::kFloat: return store_as<float>(p, v);
  case DataType::kDouble: return store_as<double>(p, v);
  case DataType::kInt8: return store_as<int8_t>(p, v);
  case DataType::kUint8: return store_as<uint8_t>(p, v);
  case DataType::kInt32: return store_as<int32_t>(p, v);
  case DataType::kUint32: return store_as<uint32_t>(p, v);
  case DataType::kInt64: return store_as<int64_t>(p, v);
  case DataType::kUint64: return store_as<uint64_t>(p, v);
  case DataType::kHalf: return store_as<uint16_t>(p, float_to_half(static_cast<float>(v)));
  case DataType::kBfloat16: return store_as<uint16_t>(p, float_to_bfloat16(static_cast<float>(v)));
  case DataType::kFloat8e4m3: return store_as<uint8_t>(p, double_to_fp8e4m3(v));
  case DataType::kFloat8e5m2: return store_as<uint8_t>(p, double_to_fp8e5m2(v));
  }
}

// NCCL's pre-multiplied sum scales rank r's input by 1 + r % 2 (this tool's choice).
double premul(ReduceOp op, int rank) {
  return op == ReduceOp::kMulSum ? 1 + rank % 2 : 1;
}

double combine(ReduceOp op, double a, double b) {
  switch (op) {
  case ReduceOp::kSum:
  case ReduceOp::kMulSum:
  case ReduceOp::kAvg: return a + b;
  case ReduceOp::kProd: return a * b;
  case ReduceOp::kMax: return std::max(a, b);
  case ReduceOp::kMin: return std::min(a, b);
  }
  return 0;
}

// What each rank's output holds after the collective, computed from the filled inputs
// in the buffers' own type, as a backend would (sums accumulated in the type).
std::vector<Bytes> run_on_host(Collective c, DataType t, ReduceOp op, int n, std::size_t bytes) {
  const std::size_t elt = data_type_size(t);
  std::vector<Bytes> in(n), out(n);
  CheckSpec s0 = spec_of(c, t, op, n, 0, bytes);
  for (int r = 0; r < n; ++r) {
    CheckSpec s = spec_of(c, t, op, n, r, bytes);
    in[r].resize(s.counts.send * elt);
    fill_input(s, in[r]);
    out[r].assign(s.counts.recv * elt, std::byte{0});
  }
  const std::size_t p = s0.counts.param;
  auto reduced = [&](std::size_t k) {
    Bytes acc(elt);
    store(acc, t, 0, element(in[0], t, k) * premul(op, 0));
    for (int r = 1; r < n; ++r)
      store(acc, t, 0, combine(op, element(acc, t, 0), element(in[r], t, k) * premul(op, r)));
    double v = element(acc, t, 0);
    return op == ReduceOp::kAvg ? (is_floating(t) ? v / n : std::trunc(v / n)) : v;
  };
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < s0.counts.recv; ++i) {
      double v = 0;
      switch (c) {
      case Collective::kAllReduce: v = reduced(i); break;
      case Collective::kReduce: v = r == s0.root ? reduced(i) : 0; break;
      case Collective::kReduceScatter: v = reduced(r * p + i); break;
      case Collective::kAllGather: v = element(in[i / p], t, i % p); break;
      case Collective::kAllToAll: v = element(in[i / p], t, r * p + i % p); break;
      case Collective::kBroadcast: v = element(in[s0.root], t, i); break;
      case Collective::kSendRecv: v = element(in[(r - 1 + n) % n], t, i); break;
      }
      store(out[r], t, i, v);
    }
  }
  return out;
}

struct Case {
  Collective c;
  DataType t;
  ReduceOp op;
  int n;
};

TEST(CheckValues, EveryCollectiveTypeAndOpVerifiesCleanAndCatchesOneWrongElement) {
  std::vector<Case> cases;
  for (Collective c : kAllCollectives) {
    for (DataType t : kAllDataTypes) {
      for (ReduceOp op : kAllReduceOps) {
        if (!uses_op(c) && op != ReduceOp::kSum) continue;
        for (int n : {1, 3, 8})
          cases.push_back({c, t, op, n});
      }
    }
  }
  for (const Case& k : cases) {
    SCOPED_TRACE(std::string(collective_name(k.c)) + " " + std::string(data_type_name(k.t)) + " " +
                 std::string(reduce_op_name(k.op)) + " n=" + std::to_string(k.n));
    const std::size_t bytes = 1024; // 128 to 1024 elements: every rank and block is checked
    std::vector<Bytes> out = run_on_host(k.c, k.t, k.op, k.n, bytes);
    for (int r = 0; r < k.n; ++r) {
      CheckSpec s = spec_of(k.c, k.t, k.op, k.n, r, bytes);
      CheckOutcome ok = verify_output(s, out[r]);
      EXPECT_EQ(ok.wrong, 0u) << "rank " << r << " first at " << ok.first_index << ": got "
                              << ok.first_got << " want " << ok.first_expected;
      if (ok.checked == 0) continue; // reduce: only the root's output is defined
      Bytes bad = out[r];
      const std::size_t at = ok.checked / 2;
      store(bad, k.t, at, element(bad, k.t, at) + 1);
      CheckOutcome caught = verify_output(s, bad);
      EXPECT_EQ(caught.wrong, 1u);
      EXPECT_EQ(caught.first_index, at);
    }
  }
}

TEST(CheckValues, InputsDependOnRankElementAndSeed) {
  CheckSpec a = spec_of(Collective::kAllGather, DataType::kFloat, ReduceOp::kSum, 4, 0, 1 << 12);
  CheckSpec b = a;
  b.seed = 8;
  int same_rank = 0, same_seed = 0;
  for (std::size_t i = 0; i < 256; ++i) {
    same_rank += input_value(a, 0, i) == input_value(a, 1, i);
    same_seed += input_value(a, 0, i) == input_value(b, 0, i);
  }
  EXPECT_LT(same_rank, 4); // a misplaced element is almost never equal by chance
  EXPECT_LT(same_seed, 4);
}

TEST(CheckValues, SumsStayExactForManyRanksInNarrowTypes) {
  // 512 ranks of bfloat16 (8 bits of mantissa): each element's sum must still be exact.
  CheckSpec s = spec_of(Collective::kAllReduce, DataType::kBfloat16, ReduceOp::kSum, 512, 0, 256);
  for (std::size_t i = 0; i < 64; ++i) {
    double sum = 0;
    for (int r = 0; r < 512; ++r) {
      sum += input_value(s, r, i);
      EXPECT_LE(std::fabs(sum), 256.0);
    }
  }
}

// Unsigned types never see a negative value, whatever the operation and the ranks.
TEST(CheckValues, UnsignedTypesGetNoNegativeValues) {
  for (DataType t : {DataType::kUint8, DataType::kUint32, DataType::kUint64}) {
    for (ReduceOp op : kAllReduceOps) {
      for (int n : {2, 7, 300}) {
        CheckSpec s = spec_of(Collective::kAllReduce, t, op, n, 0, 1024);
        for (int r = 0; r < n; r += 3) {
          for (std::size_t i = 0; i < 64; ++i)
            ASSERT_GE(input_value(s, r, i), 0) << data_type_name(t) << " " << reduce_op_name(op);
        }
      }
    }
  }
}

TEST(HalfFloat, Fp8ConvertsAsCudaDoes) {
  // Every integer up to 16 (e4m3) and 8 (e5m2) is exact: the checks' values stay there.
  for (int v = -16; v <= 16; ++v)
    EXPECT_EQ(fp8e4m3_to_double(double_to_fp8e4m3(v)), v);
  for (int v = -8; v <= 8; ++v)
    EXPECT_EQ(fp8e5m2_to_double(double_to_fp8e5m2(v)), v);
  // Bit patterns as CUDA's cuda_fp8.h encodes them.
  EXPECT_EQ(double_to_fp8e4m3(1.0), 0x38);
  EXPECT_EQ(double_to_fp8e4m3(-2.0), 0xc0);
  EXPECT_EQ(double_to_fp8e4m3(448.0), 0x7e);
  EXPECT_EQ(double_to_fp8e4m3(1e6), 0x7e);                     // saturates (__NV_SATFINITE)
  EXPECT_EQ(double_to_fp8e4m3(17.0), double_to_fp8e4m3(16.0)); // ties to even
  EXPECT_EQ(double_to_fp8e4m3(std::ldexp(1.0, -9)), 0x01);     // smallest subnormal
  EXPECT_TRUE(std::isnan(fp8e4m3_to_double(0x7f)));
  EXPECT_EQ(double_to_fp8e5m2(1.0), 0x3c);
  EXPECT_EQ(double_to_fp8e5m2(57344.0), 0x7b);
  EXPECT_EQ(double_to_fp8e5m2(1e9), 0x7b);
  EXPECT_EQ(fp8e5m2_to_double(0x7c), HUGE_VAL);
  EXPECT_EQ(fp8e5m2_to_double(0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(fp8e4m3_to_double(double_to_fp8e4m3(0.1)), 0.1015625); // nearest: 13 x 2^-7
}

TEST(HalfFloat, ConversionsRoundTripAndRound) {
  for (int v = -2048; v <= 2048; ++v) {
    EXPECT_EQ(half_to_float(float_to_half(static_cast<float>(v))), static_cast<float>(v));
  }
  for (int v = -256; v <= 256; ++v) {
    EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(static_cast<float>(v))), static_cast<float>(v));
  }
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);                    // overflow: infinity
  EXPECT_EQ(float_to_half(2049.0f), float_to_half(2048.0f)); // ties to even
  EXPECT_FLOAT_EQ(half_to_float(0x0001), 5.9604645e-8f);     // smallest subnormal
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(257.0f), float_to_bfloat16(256.0f));
}

} // namespace
} // namespace fabric::nccltest
