// The collectives, data types and reduction operations fabric-nccltest runs, with the
// facts nccl-tests attaches to each: names as nccl-tests prints them, how a message size
// becomes element counts (and how it is rounded), and the bus-bandwidth factor.
//
// Plain data and arithmetic, no NCCL or MPI header: the backends map these enums to their
// own types in one table each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fabric::nccltest {

enum class Collective {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv
};
// New members go at the end: the device kernels receive a type by its number.
enum class DataType {
  kFloat,
  kDouble,
  kInt32,
  kInt64,
  kHalf,
  kBfloat16,
  kInt8,
  kUint8,
  kUint32,
  kUint64,
  kFloat8e4m3,
  kFloat8e5m2
};
enum class ReduceOp { kSum, kProd, kMax, kMin, kAvg, kMulSum };

inline constexpr Collective kAllCollectives[] = {Collective::kAllReduce,     Collective::kAllGather,
                                                 Collective::kReduceScatter, Collective::kBroadcast,
                                                 Collective::kReduce,        Collective::kAllToAll,
                                                 Collective::kSendRecv};
// In nccl-tests' order for "-d all" (its test_types).
inline constexpr DataType kAllDataTypes[] = {
    DataType::kInt8,   DataType::kUint8,    DataType::kInt32,      DataType::kUint32,
    DataType::kInt64,  DataType::kUint64,   DataType::kHalf,       DataType::kFloat,
    DataType::kDouble, DataType::kBfloat16, DataType::kFloat8e4m3, DataType::kFloat8e5m2};
// nccl-tests' order (its test_opnames); mulsum is NCCL's pre-multiplied sum
// (ncclRedOpCreatePreMulSum), each rank's input scaled by its own scalar.
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax,
                                             ReduceOp::kMin, ReduceOp::kAvg,  ReduceOp::kMulSum};

// "all_reduce", "all_gather", ... (also what --collective accepts).
std::string_view collective_name(Collective c);
// The nccl-tests program this run stands in for: "all_reduce_perf".
std::string collective_program(Collective c);
Result<Collective> parse_collective(std::string_view text);
// The collective a program name stands for, as nccl-tests names its programs: the last
// component of argv[0], "all_reduce_perf" (or nccl-tests' MPI build's "all_reduce_perf_mpi");
// nullopt for any other name (fabric-nccltest itself).
std::optional<Collective> collective_of_program(std::string_view argv0);

// nccl-tests' type names: "int8", "uint8", "int32", ..., "bfloat16", "f8e4m3", "f8e5m2".
std::string_view data_type_name(DataType t);
std::size_t data_type_size(DataType t);
bool is_floating(DataType t);
bool is_unsigned(DataType t);
bool is_fp8(DataType t);
Result<DataType> parse_data_type(std::string_view text);

std::string_view reduce_op_name(ReduceOp op);
Result<ReduceOp> parse_reduce_op(std::string_view text);

// Whether a collective takes a reduction operation and a root, as nccl-tests prints them
// (a collective without an operation prints "none"; one without a root prints -1).
// sendrecv prints the operation although it does not use it, as nccl-tests does.
bool uses_op(Collective c);
bool prints_op(Collective c);
bool uses_root(Collective c);
// alltoall and sendrecv run in place but their result is not checked there (N/A), as in
// nccl-tests: the in-place form overwrites what it still has to send.
bool checks_in_place(Collective c);

// Element counts for one message size, as nccl-tests' getCollByteCount computes them.
struct CollectiveCounts {
  std::size_t send = 0;         // elements in this rank's send buffer
  std::size_t recv = 0;         // elements in this rank's receive buffer
  std::size_t param = 0;        // the count passed to the collective call
  std::size_t send_inplace = 0; // in-place: where this rank's input starts, per rank index
  std::size_t recv_inplace = 0; // in-place: where this rank's output starts, per rank index
  // The size nccl-tests prints in the "size" column: the larger of send and receive bytes.
  std::size_t printed_bytes(std::size_t element_size) const;
};

// `bytes` of `element_size`-byte elements over `nranks` ranks. all_gather, reduce_scatter
// and alltoall round each rank's share down to a multiple of 16 bytes.
CollectiveCounts collective_counts(Collective c, std::size_t bytes, std::size_t element_size,
                                   int nranks);

// Bytes each rank needs for its send and receive buffers to run every size up to
// `max_bytes` (nccl-tests' getBuffSize).
struct BufferBytes {
  std::size_t send = 0;
  std::size_t recv = 0;
};
BufferBytes buffer_bytes(Collective c, std::size_t max_bytes, int nranks);

// The bus-bandwidth factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter and alltoall
// (n-1)/n; broadcast, reduce and sendrecv 1.
double bus_factor(Collective c, int nranks);

struct Bandwidth {
  double algbw = 0; // GB/s (1e9 bytes per second), as nccl-tests
  double busbw = 0; // GB/s
};
// For `param_count` elements of `element_size` bytes taking `seconds` per operation.
Bandwidth bandwidth(Collective c, std::size_t param_count, std::size_t element_size, double seconds,
                    int nranks);

// Which backend runs the collectives, and what it lacks: a type or an operation that one
// backend lacks is a usage error naming both.
enum class BackendKind { kNccl, kMpi };
std::string_view backend_name(BackendKind b);
Result<BackendKind> parse_backend(std::string_view text);
// The backend when none was named: nccl where it can run, mpi on a node without GPU. A node
// whose GPUs the nccl backend cannot use (no CUDA runtime that fits the driver, no NCCL)
// is refused with `reason`, never measured on host memory without being asked to.
Result<BackendKind> default_backend(bool nccl_usable, int driver_gpus, const std::string& reason);
bool backend_has_type(BackendKind b, DataType t);
bool backend_has_op(BackendKind b, ReduceOp op);

} // namespace fabric::nccltest
