#include "nccltest/collectives.h"

#include "common/bus_bandwidth.h"

#include <algorithm>

namespace fabric::nccltest {
namespace {

template <typename Enum, std::size_t N>
Result<Enum> parse_name(std::string_view text, const Enum (&all)[N], std::string_view (*name)(Enum),
                        std::string_view what) {
  std::string known;
  for (Enum e : all) {
    if (name(e) == text) return e;
    known += (known.empty() ? "" : ", ") + std::string(name(e));
  }
  return Error(ErrorCode::kInvalidArgument, std::string(what),
               "unknown value '" + std::string(text) + "' (one of " + known + ")");
}

// nccl-tests rounds a rank's share of an all_gather, reduce_scatter or alltoall down to
// 16 bytes, so that every rank's block stays aligned.
std::size_t aligned_share(std::size_t count, std::size_t element_size, int nranks) {
  std::size_t per_rank = count / static_cast<std::size_t>(nranks);
  std::size_t align = element_size >= 16 ? 1 : 16 / element_size;
  return per_rank & ~(align - 1);
}

} // namespace

std::string_view collective_name(Collective c) {
  switch (c) {
  case Collective::kAllReduce: return "all_reduce";
  case Collective::kAllGather: return "all_gather";
  case Collective::kReduceScatter: return "reduce_scatter";
  case Collective::kBroadcast: return "broadcast";
  case Collective::kReduce: return "reduce";
  case Collective::kAllToAll: return "alltoall";
  case Collective::kSendRecv: return "sendrecv";
  }
  return "?";
}

std::string collective_program(Collective c) {
  return std::string(collective_name(c)) + "_perf";
}

Result<Collective> parse_collective(std::string_view text) {
  return parse_name(text, kAllCollectives, collective_name, "--collective");
}

std::optional<Collective> collective_of_program(std::string_view argv0) {
  std::string_view name = argv0.substr(argv0.rfind('/') + 1);
  // nccl-tests' Makefile takes NAME_SUFFIX=_mpi for its MPI build's programs.
  if (name.ends_with("_mpi")) name.remove_suffix(4);
  if (!name.ends_with("_perf")) return std::nullopt;
  name.remove_suffix(5);
  for (Collective c : kAllCollectives) {
    if (collective_name(c) == name) return c;
  }
  return std::nullopt;
}

std::string_view data_type_name(DataType t) {
  switch (t) {
  case DataType::kFloat: return "float";
  case DataType::kDouble: return "double";
  case DataType::kInt32: return "int32";
  case DataType::kInt64: return "int64";
  case DataType::kHalf: return "half";
  case DataType::kBfloat16: return "bfloat16";
  case DataType::kInt8: return "int8";
  case DataType::kUint8: return "uint8";
  case DataType::kUint32: return "uint32";
  case DataType::kUint64: return "uint64";
  case DataType::kFloat8e4m3: return "f8e4m3";
  case DataType::kFloat8e5m2: return "f8e5m2";
  }
  return "?";
}

std::size_t data_type_size(DataType t) {
  switch (t) {
  case DataType::kInt8:
  case DataType::kUint8:
  case DataType::kFloat8e4m3:
  case DataType::kFloat8e5m2: return 1;
  case DataType::kHalf:
  case DataType::kBfloat16: return 2;
  case DataType::kFloat:
  case DataType::kInt32:
  case DataType::kUint32: return 4;
  case DataType::kDouble:
  case DataType::kInt64:
  case DataType::kUint64: return 8;
  }
  return 0;
}

bool is_floating(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kHalf ||
         t == DataType::kBfloat16 || is_fp8(t);
}

bool is_unsigned(DataType t) {
  return t == DataType::kUint8 || t == DataType::kUint32 || t == DataType::kUint64;
}

bool is_fp8(DataType t) {
  return t == DataType::kFloat8e4m3 || t == DataType::kFloat8e5m2;
}

Result<DataType> parse_data_type(std::string_view text) {
  return parse_name(text, kAllDataTypes, data_type_name, "-d/--datatype");
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
  case ReduceOp::kSum: return "sum";
  case ReduceOp::kProd: return "prod";
  case ReduceOp::kMax: return "max";
  case ReduceOp::kMin: return "min";
  case ReduceOp::kAvg: return "avg";
  case ReduceOp::kMulSum: return "mulsum";
  }
  return "?";
}

Result<ReduceOp> parse_reduce_op(std::string_view text) {
  return parse_name(text, kAllReduceOps, reduce_op_name, "-o/--op");
}

bool uses_op(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

bool prints_op(Collective c) {
  return uses_op(c) || c == Collective::kSendRecv;
}

bool uses_root(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce;
}

bool checks_in_place(Collective c) {
  return c != Collective::kAllToAll && c != Collective::kSendRecv;
}

std::size_t CollectiveCounts::printed_bytes(std::size_t element_size) const {
  return std::max(send, recv) * element_size;
}

CollectiveCounts collective_counts(Collective c, std::size_t bytes, std::size_t element_size,
                                   int nranks) {
  CollectiveCounts k;
  const std::size_t count = bytes / element_size;
  const auto n = static_cast<std::size_t>(nranks);
  switch (c) {
  case Collective::kAllReduce:
  case Collective::kBroadcast:
  case Collective::kReduce:
  case Collective::kSendRecv: k.send = k.recv = k.param = count; break;
  case Collective::kAllGather: {
    std::size_t base = aligned_share(count, element_size, nranks);
    k.send = base;
    k.recv = base * n;
    k.send_inplace = base;
    k.param = base;
    break;
  }
  case Collective::kReduceScatter: {
    std::size_t base = aligned_share(count, element_size, nranks);
    k.send = base * n;
    k.recv = base;
    k.recv_inplace = base;
    k.param = base;
    break;
  }
  case Collective::kAllToAll: {
    std::size_t base = aligned_share(count, element_size, nranks);
    k.param = base;
    k.send = k.recv = base * n;
    break;
  }
  }
  return k;
}

BufferBytes buffer_bytes(Collective c, std::size_t max_bytes, int nranks) {
  CollectiveCounts k = collective_counts(c, max_bytes, 1, nranks);
  return {k.send, k.recv};
}

double bus_factor(Collective c, int nranks) {
  switch (c) {
  case Collective::kAllReduce: return fabric::bus_factor(BusPattern::kAllReduce, nranks);
  case Collective::kAllGather:
  case Collective::kReduceScatter:
  case Collective::kAllToAll: return fabric::bus_factor(BusPattern::kOneShareEach, nranks);
  case Collective::kBroadcast:
  case Collective::kReduce:
  case Collective::kSendRecv: return fabric::bus_factor(BusPattern::kRootOrPeer, nranks);
  }
  return 1.0;
}

Bandwidth bandwidth(Collective c, std::size_t param_count, std::size_t element_size, double seconds,
                    int nranks) {
  double bytes = static_cast<double>(param_count) * static_cast<double>(element_size);
  if (c == Collective::kAllGather || c == Collective::kReduceScatter ||
      c == Collective::kAllToAll) {
    bytes *= nranks;
  }
  Bandwidth bw;
  if (seconds <= 0) return bw;
  bw.algbw = bytes / 1.0e9 / seconds;
  bw.busbw = bw.algbw * bus_factor(c, nranks);
  return bw;
}

std::string_view backend_name(BackendKind b) {
  return b == BackendKind::kNccl ? "nccl" : "mpi";
}

Result<BackendKind> parse_backend(std::string_view text) {
  if (text == "nccl") return BackendKind::kNccl;
  if (text == "mpi") return BackendKind::kMpi;
  return Error(ErrorCode::kInvalidArgument, "--backend",
               "unknown value '" + std::string(text) + "' (nccl or mpi)");
}

Result<BackendKind> default_backend(bool nccl_usable, int driver_gpus, const std::string& reason) {
  if (nccl_usable) return BackendKind::kNccl;
  if (driver_gpus <= 0) return BackendKind::kMpi;
  return Error(ErrorCode::kUnsupported, "choosing the backend",
               "the nccl backend cannot run: " + reason)
      .with_hint("name the folders of a CUDA runtime that fits the driver and of NCCL in "
                 "FABRIC_CUDA_LIBRARY_PATH, or measure host memory with --backend mpi");
}

bool backend_has_type(BackendKind b, DataType t) {
  // MPI has no standard half, bfloat16 or fp8 type.
  return b == BackendKind::kNccl ||
         (t != DataType::kHalf && t != DataType::kBfloat16 && !is_fp8(t));
}

bool backend_has_op(BackendKind b, ReduceOp op) {
  // MPI has neither an average nor a pre-multiplied sum. Scaling the input before
  // MPI_Allreduce would time a local pass over the buffer with the collective, which no
  // MPI program does: a different measurement under the same name.
  return b == BackendKind::kNccl || (op != ReduceOp::kAvg && op != ReduceOp::kMulSum);
}

} // namespace fabric::nccltest
