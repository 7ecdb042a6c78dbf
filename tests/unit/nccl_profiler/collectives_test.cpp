// What an operation is, how big, in which bucket, and its bus-bandwidth factor: the facts
// that make the exporter's numbers comparable with nccl-tests'.
#include <gtest/gtest.h>

#include "exporters/nccl_profiler/collectives.h"

namespace fabric::nccl_profiler {
namespace {

TEST(Collectives, NcclNamesMapToOurLabels) {
  struct Case {
    const char* nccl;
    std::string_view label;
  };
  // The strings of ncclFuncToString (src/collectives.cc).
  for (auto [nccl, label] :
       {Case{"AllReduce", "all_reduce"}, Case{"AllGather", "all_gather"},
        Case{"ReduceScatter", "reduce_scatter"}, Case{"Broadcast", "broadcast"},
        Case{"Reduce", "reduce"}, Case{"AlltoAll", "alltoall"}, Case{"Send", "send"},
        Case{"Recv", "recv"}, Case{"Gather", "other"}, Case{"Scatter", "other"},
        Case{"SendRecv", "other"}, Case{"PutSignal", "other"}, Case{"", "other"}}) {
    Collective c = collective_from_nccl(nccl);
    EXPECT_EQ(collective_name(c), label) << nccl;
    EXPECT_EQ(parse_collective_name(label), c) << label;
  }
  EXPECT_EQ(parse_collective_name("AllReduce"), std::nullopt);
}

TEST(Collectives, DatatypeSizesFollowNccl) {
  // ncclDatatypeToString's names; "Unknown" is what it returns for ncclUint8.
  EXPECT_EQ(datatype_size("ncclInt8"), 1u);
  EXPECT_EQ(datatype_size("Unknown"), 1u);
  EXPECT_EQ(datatype_size("ncclFloat8e4m3"), 1u);
  EXPECT_EQ(datatype_size("ncclFloat8e5m2"), 1u);
  EXPECT_EQ(datatype_size("ncclFloat16"), 2u);
  EXPECT_EQ(datatype_size("ncclBfloat16"), 2u);
  EXPECT_EQ(datatype_size("ncclInt32"), 4u);
  EXPECT_EQ(datatype_size("ncclUint32"), 4u);
  EXPECT_EQ(datatype_size("ncclFloat32"), 4u);
  EXPECT_EQ(datatype_size("ncclInt64"), 8u);
  EXPECT_EQ(datatype_size("ncclUint64"), 8u);
  EXPECT_EQ(datatype_size("ncclFloat64"), 8u);
  EXPECT_EQ(datatype_size("float"), 0u);
  EXPECT_EQ(datatype_size(""), 0u);
}

TEST(Collectives, MessageBytesAreWhatNcclTestsCallSize) {
  // all_reduce_perf -b 64M with float: count 16M, size 64 MiB.
  EXPECT_EQ(message_bytes(Collective::kAllReduce, 16 << 20, 4, 8), 64u << 20);
  // all_gather_perf with 8 ranks: NCCL's count is the per-rank sendcount, the size the
  // gathered buffer.
  EXPECT_EQ(message_bytes(Collective::kAllGather, 1 << 20, 4, 8), 32u << 20);
  EXPECT_EQ(message_bytes(Collective::kReduceScatter, 1 << 20, 2, 4), 8u << 20);
  EXPECT_EQ(message_bytes(Collective::kAllToAll, 1024, 8, 16), 128u << 10);
  EXPECT_EQ(message_bytes(Collective::kBroadcast, 1000, 8, 16), 8000u);
  EXPECT_EQ(message_bytes(Collective::kSend, 3, 2, 16), 6u);
  EXPECT_EQ(message_bytes(Collective::kAllReduce, 100, 0, 8), 0u);
}

TEST(Collectives, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(*bus_factor(Collective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(*bus_factor(Collective::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(*bus_factor(Collective::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(*bus_factor(Collective::kAllToAll, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(*bus_factor(Collective::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(*bus_factor(Collective::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(*bus_factor(Collective::kSend, 2), 1.0);
  EXPECT_DOUBLE_EQ(*bus_factor(Collective::kRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(*bus_factor(Collective::kAllReduce, 1), 0.0);
  EXPECT_EQ(bus_factor(Collective::kOther, 8), std::nullopt);
  EXPECT_EQ(bus_factor(Collective::kAllReduce, 0), std::nullopt);
}

TEST(Collectives, SizeBucketsArePowersOfTwo) {
  EXPECT_EQ(size_bucket(0), 0u);
  EXPECT_EQ(bucket_lower_bound(size_bucket(0)), 0u);
  EXPECT_EQ(bucket_lower_bound(size_bucket(1)), 1u);
  EXPECT_EQ(bucket_lower_bound(size_bucket(8)), 8u);
  EXPECT_EQ(bucket_lower_bound(size_bucket(1500)), 1024u);
  EXPECT_EQ(bucket_lower_bound(size_bucket(2047)), 1024u);
  EXPECT_EQ(bucket_lower_bound(size_bucket(2048)), 2048u);
  EXPECT_EQ(bucket_lower_bound(size_bucket(64u << 20)), 64u << 20);
  EXPECT_EQ(size_bucket(UINT64_MAX), kSizeBuckets - 1);
  EXPECT_EQ(bucket_lower_bound(kSizeBuckets - 1), uint64_t{1} << 63);
  // Every bucket's name leads back to it, and nothing else names a bucket.
  for (unsigned b = 0; b < kSizeBuckets; ++b)
    EXPECT_EQ(bucket_of_lower_bound(bucket_lower_bound(b)), b);
  EXPECT_EQ(bucket_of_lower_bound(1000), std::nullopt);
  EXPECT_EQ(bucket_of_lower_bound(3), std::nullopt);
}

} // namespace
} // namespace fabric::nccl_profiler
