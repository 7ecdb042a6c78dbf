// The data of a checked run: every rank's input is a pure function of (rank, element,
// seed), so each rank knows exactly what every other rank sent and what its own result
// must be, without any extra communication. Values are small integers chosen so that every
// reduction is exact in every type (a sum over n ranks stays within the type's exact
// integer range, a product is +-1 or +-2); only the average of floating-point values, which
// NCCL computes as a pre-scaled sum, is compared with a tolerance.
//
// The per-element arithmetic lives in check_math.h, which the nccl backend's device kernels
// compile too (device_checks.h); these host functions are the reference, the mpi backend's
// checks, and the fallback of a GPU node without the kernels, which stages the data through
// host memory in bounded chunks (data_check.h): each function takes the index of the first
// element of the span it is given.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "nccltest/check_math.h"
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

// The kernels' view of a spec: its fields plus the value spread and tolerance.
check_math::Params make_params(const CheckSpec& spec);

// Writes this rank's input elements [first, first + input.size() / element size), clipped
// to counts.send, of spec.type into `input`. In place, callers pass the region where the
// collective expects the input.
void fill_input(const CheckSpec& spec, std::span<std::byte> input, std::size_t first = 0);

struct CheckOutcome {
  std::size_t checked = 0; // elements compared
  std::size_t wrong = 0;
  // The first wrong element: its index in the output, what it held and what it should.
  std::size_t first_index = 0;
  double first_got = 0;
  double first_expected = 0;
};

// Compares this rank's output elements [first, first + output.size() / element size),
// clipped to counts.recv, with the expected values (for reduce, only the root's output is
// defined: other ranks check nothing). first_index counts from the start of the output.
CheckOutcome verify_output(const CheckSpec& spec, std::span<const std::byte> output,
                           std::size_t first = 0);

// Adds a later chunk's outcome to `total` (keeping the first wrong element seen).
void merge_outcome(CheckOutcome& total, const CheckOutcome& chunk);

// What output element `index` must hold, as stored in spec.type; and what one stored
// element holds (the device checks report the first wrong element by its index only).
double expected_output(const CheckSpec& spec, std::size_t index);
double stored_value(DataType type, std::span<const std::byte> element);
// `value` as one element of `type` holds it, in its first data_type_size(type) bytes (the
// scalar of mulsum's ncclRedOpCreatePreMulSum, which NCCL reads in the data's type).
std::array<std::byte, 8> stored_bytes(DataType type, double value);

} // namespace fabric::nccltest
