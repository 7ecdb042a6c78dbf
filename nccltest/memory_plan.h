// How much memory each rank's buffers take, and the largest size that fits, decided before
// any rank allocates. Every rank computes the same plan from every rank's free memory (the
// facts the ranks exchanged), so all agree on the sizes without another exchange.
//
// On GPUs, as nccl-tests does: two buffers of the larger of the send and receive sizes (in
// place, the receive buffer also holds the input), a reserve for NCCL's own use (its
// channels, proxies and connection buffers: nccl-tests keeps 1 GiB), and, when -e asks for
// more, the largest size reduced to what fits ("Reducing maxBytes to ..."). A run whose
// smallest size does not fit is refused with the figures.
//
// On host memory (the mpi backend) MPI's collectives allocate a temporary of the message
// size beside the two buffers: peak RSS per rank at 1 GiB messages over 2 ranks measured
// 2.64 GB for all_reduce and alltoall, 2.18 GB for reduce_scatter, all_gather and
// broadcast, and 3.16 GB at reduce's root. So three buffers count there (nccl-tests counts
// three too when it checks), and a reserve is kept for what no buffer holds (below).
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

// What one rank's run holds per buffer set: two buffers on the nccl backend, three on the
// mpi backend (MPI's temporary); with --pairs a second set for the pair's communicator
// (ncclCommSplit's engine has its own).
uint64_t buffer_bytes_per_rank(const Options& options, BackendKind backend, std::size_t max_bytes,
                               int nranks);

// What is kept back from a rank's room on host memory, for the MPI library's shared-memory
// segments, the program itself, page tables and the allocator's slack, and the kernel: an
// eighth of the room, at least 256 MiB. Measured at 8-byte messages, a rank's peak RSS is
// 16 MB (mostly shared libraries) and a whole 2-rank job under mpirun charges 20 MB to its
// memory cgroup, so 256 MiB leaves a wide margin on a small pod and costs nothing that
// matters on a node; the eighth grows with the buffers (page tables, Open MPI's pipeline
// fragments), which a fixed figure would not.
inline constexpr uint64_t kHostReserveMinBytes = uint64_t{256} << 20;
uint64_t host_reserve_bytes(uint64_t room);

struct MemoryPlan {
  std::size_t max_bytes = 0; // the run's largest size, reduced where needed
  std::string note;          // the header line when reduced, else ""
};

// `free_bytes`: the least memory any rank has (the GPU's free memory, or the host's room
// per rank: MemAvailable or the memory cgroup's, whichever is less); nullopt when unknown (then
// nothing is reduced). `where` names it for the refusal ("GPU memory free on node-a").
Result<MemoryPlan> plan_memory(const Options& options, BackendKind backend, int nranks,
                               std::optional<uint64_t> free_bytes, const std::string& where);

} // namespace fabric::nccltest
