#include "exporters/nccl_profiler/collectives.h"

#include "common/bus_bandwidth.h"

#include <array>
#include <bit>

namespace fabric::nccl_profiler {
namespace {

constexpr std::array<std::string_view, kCollectiveCount> kNames = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
    "alltoall",   "send",       "recv",           "other"};

struct NcclType {
  std::string_view name;
  unsigned size;
};
// ncclDatatypeToString (src/collectives.cc, 2.27 to 2.30) has no case for ncclUint8 and
// returns "Unknown" for it; every other ncclDataType_t has a name, so "Unknown" is the
// one-byte ncclUint8. "ncclUint8" is listed too, for the day NCCL names it.
constexpr std::array<NcclType, 13> kTypes = {{
    {"ncclFloat32", 4},
    {"ncclBfloat16", 2},
    {"ncclFloat16", 2},
    {"ncclInt32", 4},
    {"ncclFloat64", 8},
    {"ncclInt64", 8},
    {"ncclUint32", 4},
    {"ncclUint64", 8},
    {"ncclInt8", 1},
    {"Unknown", 1},
    {"ncclUint8", 1},
    {"ncclFloat8e4m3", 1},
    {"ncclFloat8e5m2", 1},
}};

} // namespace

Collective collective_from_nccl(std::string_view func) {
  if (func == "AllReduce") return Collective::kAllReduce;
  if (func == "AllGather") return Collective::kAllGather;
  if (func == "ReduceScatter") return Collective::kReduceScatter;
  if (func == "Broadcast") return Collective::kBroadcast;
  if (func == "Reduce") return Collective::kReduce;
  if (func == "AlltoAll") return Collective::kAllToAll;
  if (func == "Send") return Collective::kSend;
  if (func == "Recv") return Collective::kRecv;
  return Collective::kOther;
}

Collective collective_from_nccl_func(unsigned func) {
  // ncclFuncBroadcast 0, Reduce 1, AllGather 2, ReduceScatter 3, AllReduce 4, SendRecv 5,
  // Send 6, Recv 7.
  constexpr std::array<Collective, 8> kByFunc = {Collective::kBroadcast, Collective::kReduce,
                                                 Collective::kAllGather, Collective::kReduceScatter,
                                                 Collective::kAllReduce, Collective::kOther,
                                                 Collective::kSend,      Collective::kRecv};
  return func < kByFunc.size() ? kByFunc[func] : Collective::kOther;
}

unsigned datatype_size_of(unsigned type) {
  // ncclInt8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Float32, Float64, Bfloat16,
  // Float8e4m3, Float8e5m2: 0 to 11 in nccl.h.
  constexpr std::array<unsigned, 12> kSizes = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return type < kSizes.size() ? kSizes[type] : 0;
}

std::string_view collective_name(Collective c) {
  return kNames[static_cast<std::size_t>(c)];
}

std::optional<Collective> parse_collective_name(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Collective>(i);
  }
  return std::nullopt;
}

unsigned datatype_size(std::string_view datatype) {
  for (const auto& type : kTypes) {
    if (type.name == datatype) return type.size;
  }
  return 0;
}

uint64_t message_bytes(Collective c, uint64_t count, unsigned element_size, int nranks) {
  uint64_t bytes = count * element_size;
  switch (c) {
  case Collective::kAllGather:
  case Collective::kReduceScatter:
  case Collective::kAllToAll: return nranks > 0 ? bytes * static_cast<uint64_t>(nranks) : bytes;
  default: return bytes;
  }
}

std::optional<double> bus_factor(Collective c, int nranks) {
  if (nranks < 1) return std::nullopt;
  switch (c) {
  case Collective::kAllReduce: return fabric::bus_factor(BusPattern::kAllReduce, nranks);
  case Collective::kAllGather:
  case Collective::kReduceScatter:
  case Collective::kAllToAll: return fabric::bus_factor(BusPattern::kOneShareEach, nranks);
  case Collective::kBroadcast:
  case Collective::kReduce:
  case Collective::kSend:
  case Collective::kRecv: return fabric::bus_factor(BusPattern::kRootOrPeer, nranks);
  case Collective::kOther: return std::nullopt;
  }
  return std::nullopt;
}

unsigned size_bucket(uint64_t bytes) {
  return static_cast<unsigned>(std::bit_width(bytes));
}

uint64_t bucket_lower_bound(unsigned bucket) {
  return bucket == 0 ? 0 : uint64_t{1} << (bucket - 1);
}

std::optional<unsigned> bucket_of_lower_bound(uint64_t bytes) {
  if (bytes != 0 && !std::has_single_bit(bytes)) return std::nullopt;
  return size_bucket(bytes);
}

} // namespace fabric::nccl_profiler
