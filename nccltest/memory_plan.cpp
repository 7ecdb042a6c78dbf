#include "nccltest/memory_plan.h"

#include <algorithm>

#include "common/units.h"
#include "nccltest/collectives.h"

namespace fabric::nccltest {

std::size_t buffer_size(const Options& o, std::size_t max_bytes, int nranks) {
  BufferBytes bytes = buffer_bytes(o.collective, max_bytes, nranks);
  if (o.pairs) {
    BufferBytes pair = buffer_bytes(o.collective, o.pairs_bytes.value_or(max_bytes), 2);
    bytes.send = std::max(bytes.send, pair.send);
    bytes.recv = std::max(bytes.recv, pair.recv);
  }
  return std::max(bytes.send, bytes.recv);
}

uint64_t buffer_bytes_per_rank(const Options& o, BackendKind backend, std::size_t max_bytes,
                               int nranks) {
  const uint64_t sets = o.pairs ? 2 : 1;
  const uint64_t buffers = backend == BackendKind::kMpi ? 3 : 2;
  return sets * buffers * static_cast<uint64_t>(buffer_size(o, max_bytes, nranks));
}

uint64_t host_reserve_bytes(uint64_t room) {
  return std::max(room / 8, kHostReserveMinBytes);
}

Result<MemoryPlan> plan_memory(const Options& o, BackendKind backend, int nranks,
                               std::optional<uint64_t> free_bytes, const std::string& where) {
  MemoryPlan plan;
  plan.max_bytes = o.sweep.max_bytes;
  if (!free_bytes) return plan;
  const uint64_t reserve =
      backend == BackendKind::kNccl ? kNcclReserveBytes : host_reserve_bytes(*free_bytes);
  const uint64_t room = *free_bytes > reserve ? *free_bytes - reserve : 0;
  auto fits = [&](std::size_t max_bytes) {
    return buffer_bytes_per_rank(o, backend, max_bytes, nranks) <= room;
  };
  if (fits(plan.max_bytes)) return plan;
  const std::size_t smallest = std::min(o.sweep.min_bytes, o.sweep.max_bytes);
  if (!fits(smallest)) {
    const std::string reserved =
        " and " + units::format_size(reserve) +
        (backend == BackendKind::kNccl ? " kept for NCCL's own use"
                                       : " kept for MPI, the program and the kernel");
    return Error(ErrorCode::kInvalidArgument, "-b/--minbytes",
                 std::to_string(smallest) + " needs " +
                     units::format_size(buffer_bytes_per_rank(o, backend, smallest, nranks)) +
                     " of buffers per rank" + reserved + ", but " + where + " has " +
                     units::format_size(*free_bytes))
        .with_hint("run smaller sizes, or free the memory other processes hold");
  }
  // The largest size that fits: the buffers grow with the size, so a bisection finds it.
  std::size_t low = smallest, high = plan.max_bytes;
  while (high - low > 1) {
    const std::size_t mid = low + (high - low) / 2;
    (fits(mid) ? low : high) = mid;
  }
  plan.max_bytes = low;
  plan.note = "Reducing maxBytes to " + std::to_string(low) + " due to memory limitation";
  return plan;
}

} // namespace fabric::nccltest
