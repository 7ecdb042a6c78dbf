// The per-element arithmetic of a checked run, shared by the host (check_values.cpp, the
// reference and the fallback) and the device kernels (check_kernels.cu): one definition, so
// the GPU can only generate and expect what the host would. Plain data and integer or
// double arithmetic, no library call, so that nvcc compiles it for the device unchanged.
#pragma once

#include <cstdint>

#include "nccltest/collectives.h"

#if defined(__CUDACC__)
#define FABRIC_HOST_DEVICE __host__ __device__
#else
#define FABRIC_HOST_DEVICE
#endif

namespace fabric::nccltest::check_math {

// Everything about a check that does not change per element, as plain fields (the
// kernels receive it by value). The host computes spread and tolerance once
// (make_params in check_values.cpp).
struct Params {
  uint64_t seed = 0;
  uint64_t nranks = 1;
  uint64_t param = 0; // the collective's element count per rank
  int32_t rank = 0;
  int32_t root = 0;
  Collective collective = Collective::kAllReduce;
  ReduceOp op = ReduceOp::kSum;
  int32_t reduce = 0; // the collective reduces (all-reduce, reduce-scatter, reduce)
  int64_t spread = 0; // values are drawn from [-spread, spread], then offset is added
  int64_t offset = 0; // unsigned types: lifts every value to 0 or above
  int32_t unsigned_values = 0;
  double tolerance = 0;
};

// mulsum's scalar for `rank` (ncclRedOpCreatePreMulSum): 1 or 2, exact in every type.
FABRIC_HOST_DEVICE inline uint64_t premul_scalar(uint64_t rank) {
  return 1 + rank % 2;
}

FABRIC_HOST_DEVICE inline uint64_t mix(uint64_t x) { // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

FABRIC_HOST_DEVICE inline double uniform(uint64_t bits, int64_t spread) {
  return static_cast<double>(static_cast<int64_t>(bits % static_cast<uint64_t>(2 * spread + 1)) -
                             spread);
}

// The value rank `rank` contributes at logical element `index`.
FABRIC_HOST_DEVICE inline double value(const Params& p, uint64_t rank, uint64_t index) {
  const uint64_t key = mix(p.seed * 0x2545f4914f6cdd1dull + index);
  if (p.reduce && p.op == ReduceOp::kProd) {
    if ((key + rank) % p.nranks == 0) return 2;
    return (mix(key ^ (rank + 1)) & 3u) == 0 && !p.unsigned_values ? -1 : 1;
  }
  if (p.reduce && p.op == ReduceOp::kAvg) {
    // A per-element value plus a per-rank offset that cancels over the ranks, so the
    // average is exactly that value.
    const double base = p.spread >= 0 ? uniform(key, p.spread) : 0;
    const bool paired = rank < p.nranks - p.nranks % 2;
    return static_cast<double>(p.offset) + base + (paired ? (rank % 2 == 0 ? 1 : -1) : 0);
  }
  if (p.reduce && (p.op == ReduceOp::kSum || p.op == ReduceOp::kMulSum) && p.spread < 1) {
    return (key + rank) % p.nranks == 0 ? 1 : 0; // too many ranks for more: one rank adds 1
  }
  return static_cast<double>(p.offset) + uniform(mix(key + rank * 0x632be59bd9b4e019ull), p.spread);
}

FABRIC_HOST_DEVICE inline double reduced(const Params& p, uint64_t index) {
  const bool premul = p.op == ReduceOp::kMulSum;
  double acc = value(p, 0, index) * static_cast<double>(premul ? premul_scalar(0) : 1);
  for (uint64_t r = 1; r < p.nranks; ++r) {
    const double v = value(p, r, index);
    switch (p.op) {
    case ReduceOp::kMulSum: acc += v * static_cast<double>(premul_scalar(r)); break;
    case ReduceOp::kSum:
    case ReduceOp::kAvg: acc += v; break;
    case ReduceOp::kProd: acc *= v; break;
    case ReduceOp::kMax: acc = acc < v ? v : acc; break;
    case ReduceOp::kMin: acc = v < acc ? v : acc; break;
    }
  }
  return p.op == ReduceOp::kAvg ? acc / static_cast<double>(p.nranks) : acc;
}

// Whether this rank's output is defined at all (for reduce, only the root's is).
FABRIC_HOST_DEVICE inline bool output_defined(const Params& p) {
  return p.collective != Collective::kReduce || p.rank == p.root;
}

// The value output element `i` of this rank must hold (output_defined must hold).
FABRIC_HOST_DEVICE inline double expected(const Params& p, uint64_t i) {
  const uint64_t rank = static_cast<uint64_t>(p.rank);
  switch (p.collective) {
  case Collective::kAllReduce:
  case Collective::kReduce: return reduced(p, i);
  case Collective::kReduceScatter: return reduced(p, rank * p.param + i);
  case Collective::kAllGather: return value(p, i / p.param, i % p.param);
  case Collective::kAllToAll: return value(p, i / p.param, rank * p.param + i % p.param);
  case Collective::kBroadcast: return value(p, static_cast<uint64_t>(p.root), i);
  case Collective::kSendRecv: return value(p, (rank + p.nranks - 1) % p.nranks, i);
  }
  return 0;
}

FABRIC_HOST_DEVICE inline bool matches(double got, double want, double tolerance) {
  if (tolerance == 0) return got == want;
  const double d = got - want;
  return (d < 0 ? -d : d) <= tolerance;
}

} // namespace fabric::nccltest::check_math
