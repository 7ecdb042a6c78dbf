// nccl-tests' -M 1: how much GPU memory NCCL's communicators, the run's buffers and the
// collectives took, each the largest drop of free memory (cudaMemGetInfo) over one GPU of
// the run, printed after the footer as nccl-tests' writeMemInfo prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabric::nccltest {

struct GpuMemoryUsage {
  std::int64_t initialization = 0; // communicator set-up
  std::int64_t user_allocated = 0; // the send and receive buffers (and their registration)
  std::int64_t collective = 0;     // what the sizes' collectives took on top
};

// The largest fall from `before` to `after`, device by device (negative when every device
// gained memory); 0 when there is no device.
std::int64_t largest_drop(const std::vector<std::int64_t>& before,
                          const std::vector<std::int64_t>& after);

// Each figure's maximum over the processes' usages, as nccl-tests' MPI_MAX.
GpuMemoryUsage largest_usage(const std::vector<GpuMemoryUsage>& usages);

// "a b c" and back, for the exchange between processes; nullopt when malformed.
std::string encode_usage(const GpuMemoryUsage& usage);
std::optional<GpuMemoryUsage> decode_usage(const std::string& text);

// nccl-tests' getMemString: "512 B", "1.50 KB", "12.5 MB", "640 MB", "2.00 GB".
std::string memory_amount(std::int64_t bytes);

// "# GPU memory usage     : Initialization X | User-Allocated Y | Collective Z | Total  T\n".
std::string render_memory_usage(const GpuMemoryUsage& usage);

} // namespace fabric::nccltest
