// The data of a checked run: every rank's input is a pure function of (rank, element,
// seed), so each rank knows exactly what every other rank sent and what its own result
// must be, without any extra communication. Values are small integers chosen so that every
// reduction is exact in every type (a sum over n ranks stays within the type's exact
// integer range, a product is +-1 or +-2); only the average of floating-point values, which
// NCCL computes as a pre-scaled sum, is compared with a tolerance.
//
// Both backends use these functions on host memory (the nccl backend copies to and from
// the GPU), so their results are checked against the same expected values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "nccltest/collectives.h"

namespace fabric::nccltest {

struct CheckSpec {
  Collective collective = Collective::kAllReduce;
  DataType type = DataType::kFloat;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  int nranks = 1;
  int rank = 0;
  uint64_t seed = 0; // changes with each check repetition
  CollectiveCounts counts;
};

// The value rank `rank` contributes at logical element `index` (see fill_input for what
// "logical" means per collective).
double input_value(const CheckSpec& spec, int rank, std::size_t index);

// Writes this rank's input: counts.send elements of spec.type into `input` (which must hold
// at least counts.send * element size bytes). In place, callers pass the region where the
// collective expects the input.
void fill_input(const CheckSpec& spec, std::span<std::byte> input);

struct CheckOutcome {
  std::size_t checked = 0; // elements compared
  std::size_t wrong = 0;
  // The first wrong element: its index in the output, what it held and what it should.
  std::size_t first_index = 0;
  double first_got = 0;
  double first_expected = 0;
};

// Compares this rank's output (counts.recv elements; for reduce, only the root's output is
// defined, other ranks check nothing) with the expected values.
CheckOutcome verify_output(const CheckSpec& spec, std::span<const std::byte> output);

} // namespace fabric::nccltest
