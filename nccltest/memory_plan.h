// How much memory each rank's buffers take, and the largest size that fits, decided before
// any rank allocates. Every rank computes the same plan from every rank's free memory (the
// facts the ranks exchanged), so all agree on the sizes without another exchange.
//
// As nccl-tests does: two buffers of the larger of the send and receive sizes (in place,
// the receive buffer also holds the input), a reserve for NCCL's own use (its channels,
// proxies and connection buffers: nccl-tests keeps 1 GiB), and, when -e asks for more,
// the largest size reduced to what fits ("Reducing maxBytes to ..."). A run whose smallest
// size does not fit is refused with the figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "nccltest/options.h"

namespace fabric::nccltest {

inline constexpr uint64_t kNcclReserveBytes = uint64_t{1} << 30;

// The size of each of the two buffers a communicator's engine allocates for a run up to
// `max_bytes` over `nranks` (and, with --pairs, the pairs' size over two ranks).
std::size_t buffer_size(const Options& options, std::size_t max_bytes, int nranks);

// Bytes one rank allocates: two buffers, and with --pairs a second two for the pair's
// communicator (ncclCommSplit's engine has its own).
uint64_t buffer_bytes_per_rank(const Options& options, std::size_t max_bytes, int nranks);

struct MemoryPlan {
  std::size_t max_bytes = 0; // the run's largest size, reduced where needed
  std::string note;          // the header line when reduced, else ""
};

// `free_bytes`: the least memory any rank has (the GPU's free memory, or the host's
// available memory per rank); nullopt when unknown (then nothing is reduced). `where`
// names it for the refusal ("GPU memory free on node-a").
Result<MemoryPlan> plan_memory(const Options& options, BackendKind backend, int nranks,
                               std::optional<uint64_t> free_bytes, const std::string& where);

} // namespace fabric::nccltest
