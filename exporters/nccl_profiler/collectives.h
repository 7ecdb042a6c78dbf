// What the profiler plugin and the reader of its files agree on about an operation: the
// collective it is (from NCCL's own names), its message size in bytes as nccl-tests counts
// it, the power-of-two size bucket, and nccl-tests' bus-bandwidth factor.
//
// Pure functions with no dependency: this is compiled into the plugin, which is loaded
// into training processes, as well as into the exporter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fabric::nccl_profiler {

// NCCL 2.28 runs ncclAlltoAll, ncclGather and ncclScatter as point-to-point tasks, so
// they reach a profiler as Send and Recv events; kAllToAll counts the collective only
// where an NCCL reports it as one. kOther gathers any name NCCL may add, so that the set
// of label values stays fixed.
enum class Collective : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSend,
  kRecv,
  kOther,
};
inline constexpr std::size_t kCollectiveCount = 9;

// From the names NCCL's ncclFuncToString gives ("AllReduce", "Send", ...).
Collective collective_from_nccl(std::string_view func);
// From NCCL 2.23's ncclFunc_t, which profiler ABI v1 hands over instead of a name.
Collective collective_from_nccl_func(unsigned func);
// Our names, which are also the label values: nccl-tests' ("all_reduce", "all_gather",
// "reduce_scatter", "broadcast", "reduce", "alltoall"), then "send", "recv", "other".
std::string_view collective_name(Collective c);
std::optional<Collective> parse_collective_name(std::string_view name);

// Bytes per element for a name from NCCL's ncclDatatypeToString ("ncclFloat32", ...);
// 0 when the name is not an NCCL type.
unsigned datatype_size(std::string_view datatype);
// The same for an ncclDataType_t value (profiler ABI v1).
unsigned datatype_size_of(unsigned type);

// One operation's size as nccl-tests prints it: the whole buffer, which for all_gather,
// reduce_scatter and alltoall is nranks times the per-rank count NCCL's descriptor carries.
uint64_t message_bytes(Collective c, uint64_t count, unsigned element_size, int nranks);

// nccl-tests' busbw = algbw x factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter and
// alltoall (n-1)/n; broadcast, reduce, send and recv 1. None for kOther, whose traffic
// pattern is not known.
std::optional<double> bus_factor(Collective c, int nranks);

// Power-of-two buckets: bucket 0 holds empty messages, bucket b >= 1 holds sizes in
// [2^(b-1), 2^b). A bucket is named by its lower bound, so exact powers of two (the sizes
// nccl-tests sweeps) are named by themselves.
inline constexpr std::size_t kSizeBuckets = 65;
unsigned size_bucket(uint64_t bytes);
uint64_t bucket_lower_bound(unsigned bucket);
// The bucket whose lower bound is `bytes`; none unless `bytes` is 0 or a power of two.
std::optional<unsigned> bucket_of_lower_bound(uint64_t bytes);

} // namespace fabric::nccl_profiler
