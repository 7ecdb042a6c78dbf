// Bus-bandwidth factors, element counts and nccl-tests' rounding, size sweeps.
#include <gtest/gtest.h>

#include "nccltest/collectives.h"
#include "nccltest/sizes.h"

namespace fabric::nccltest {
namespace {

TEST(Collectives, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kAllToAll, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kBroadcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kReduce, 16), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::kSendRecv, 16), 1.0);
}

TEST(Collectives, BandwidthCountsEveryRanksShareWhereNcclTestsDoes) {
  // all_reduce of 1 GB in 10 ms over 4 ranks: algbw 100 GB/s, busbw 150 GB/s.
  Bandwidth ar = bandwidth(Collective::kAllReduce, 250000000, 4, 0.01, 4);
  EXPECT_NEAR(ar.algbw, 100.0, 1e-9);
  EXPECT_NEAR(ar.busbw, 150.0, 1e-9);
  // all_gather's count is per rank: the data moved is count x ranks.
  Bandwidth ag = bandwidth(Collective::kAllGather, 62500000, 4, 0.01, 4);
  EXPECT_NEAR(ag.algbw, 100.0, 1e-9);
  EXPECT_NEAR(ag.busbw, 75.0, 1e-9);
  Bandwidth a2a = bandwidth(Collective::kAllToAll, 62500000, 4, 0.01, 4);
  EXPECT_NEAR(a2a.algbw, 100.0, 1e-9);
  EXPECT_EQ(bandwidth(Collective::kAllReduce, 10, 4, 0, 4).busbw, 0.0);
}

TEST(Collectives, CountsAndRoundingFollowGetCollByteCount) {
  CollectiveCounts ar = collective_counts(Collective::kAllReduce, 1024, 4, 8);
  EXPECT_EQ(ar.send, 256u);
  EXPECT_EQ(ar.recv, 256u);
  EXPECT_EQ(ar.param, 256u);
  EXPECT_EQ(ar.printed_bytes(4), 1024u);
  // all_gather over 4 ranks: each rank's share rounded down to 16 bytes.
  CollectiveCounts ag = collective_counts(Collective::kAllGather, 100, 4, 4);
  EXPECT_EQ(ag.param, 4u); // 25 floats / 4 = 6, rounded down to 4 (16 bytes)
  EXPECT_EQ(ag.recv, 16u);
  EXPECT_EQ(ag.send_inplace, 4u);
  EXPECT_EQ(ag.printed_bytes(4), 64u);
  EXPECT_EQ(collective_counts(Collective::kAllGather, 8, 4, 4).printed_bytes(4), 0u);
  CollectiveCounts rs = collective_counts(Collective::kReduceScatter, 1 << 20, 8, 4);
  EXPECT_EQ(rs.send, 131072u);
  EXPECT_EQ(rs.recv, 32768u);
  EXPECT_EQ(rs.recv_inplace, 32768u);
  CollectiveCounts a2a = collective_counts(Collective::kAllToAll, 1000, 2, 3);
  EXPECT_EQ(a2a.param, 160u); // 500 / 3 = 166, down to a multiple of 8 halves
  EXPECT_EQ(a2a.send, 480u);
  EXPECT_EQ(a2a.recv, 480u);
  BufferBytes b = buffer_bytes(Collective::kAllGather, 1 << 20, 4);
  EXPECT_EQ(b.send, 262144u);
  EXPECT_EQ(b.recv, 1u << 20);
}

TEST(Collectives, NamesParseAndPrintAsNcclTests) {
  EXPECT_EQ(collective_program(Collective::kAllReduce), "all_reduce_perf");
  EXPECT_EQ(collective_program(Collective::kAllToAll), "alltoall_perf");
  EXPECT_EQ(*parse_collective("sendrecv"), Collective::kSendRecv);
  EXPECT_EQ(collective_of_program("/opt/nccl-tests/build/all_gather_perf"), Collective::kAllGather);
  EXPECT_EQ(collective_of_program("alltoall_perf_mpi"), Collective::kAllToAll);
  EXPECT_EQ(collective_of_program("reduce_perf"), Collective::kReduce);
  EXPECT_EQ(collective_of_program("fabric-nccltest"), std::nullopt);
  EXPECT_EQ(collective_of_program("gather_perf"), std::nullopt);
  EXPECT_EQ(collective_of_program("/usr/bin/all_reduce_perf/"), std::nullopt);
  auto bad = parse_collective("allreduce");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'allreduce'"), std::string::npos);
  EXPECT_NE(bad.error().message().find("all_reduce"), std::string::npos);
  EXPECT_EQ(*parse_data_type("bfloat16"), DataType::kBfloat16);
  EXPECT_EQ(data_type_size(DataType::kHalf), 2u);
  EXPECT_EQ(*parse_reduce_op("avg"), ReduceOp::kAvg);
  EXPECT_EQ(*parse_reduce_op("mulsum"), ReduceOp::kMulSum);
  EXPECT_EQ(*parse_data_type("f8e4m3"), DataType::kFloat8e4m3);
  EXPECT_EQ(data_type_size(DataType::kUint8), 1u);
  EXPECT_EQ(data_type_size(DataType::kUint64), 8u);
  EXPECT_TRUE(prints_op(Collective::kSendRecv));
  EXPECT_FALSE(uses_op(Collective::kSendRecv));
  EXPECT_FALSE(checks_in_place(Collective::kAllToAll));
  EXPECT_TRUE(uses_root(Collective::kReduce));
}

TEST(Collectives, BackendTablesSayWhatMpiLacks) {
  EXPECT_FALSE(backend_has_type(BackendKind::kMpi, DataType::kHalf));
  EXPECT_FALSE(backend_has_type(BackendKind::kMpi, DataType::kBfloat16));
  EXPECT_TRUE(backend_has_type(BackendKind::kMpi, DataType::kInt64));
  EXPECT_TRUE(backend_has_type(BackendKind::kNccl, DataType::kBfloat16));
  EXPECT_FALSE(backend_has_op(BackendKind::kMpi, ReduceOp::kAvg));
  EXPECT_TRUE(backend_has_op(BackendKind::kNccl, ReduceOp::kAvg));
}

TEST(Sizes, SweepsWalkAsNcclTests) {
  SizeSweep geometric{8, 128, 0, 2};
  EXPECT_EQ(sweep_sizes(geometric), (std::vector<std::size_t>{8, 16, 32, 64, 128}));
  SizeSweep linear{100, 350, 100, 1};
  EXPECT_EQ(sweep_sizes(linear), (std::vector<std::size_t>{100, 200, 300}));
  SizeSweep one{4096, 4096, 0, 2};
  EXPECT_EQ(sweep_sizes(one), (std::vector<std::size_t>{4096}));
  // Warm-up doubles from -b whatever the step.
  EXPECT_EQ(warmup_sizes(linear), (std::vector<std::size_t>{100, 200}));
}

TEST(Sizes, SweepsThatNeverEndAreRefusedNamingTheOption) {
  auto reversed = validate_sweep({1024, 8, 1, 2});
  ASSERT_FALSE(reversed.ok());
  EXPECT_NE(reversed.error().message().find("-b/--minbytes"), std::string::npos);
  EXPECT_NE(reversed.error().message().find("1024 is above -e/--maxbytes 8"), std::string::npos);
  auto from_zero = validate_sweep({0, 1024, 0, 2});
  ASSERT_FALSE(from_zero.ok());
  EXPECT_NE(from_zero.error().message().find("never grows"), std::string::npos);
  auto no_step = validate_sweep({8, 1024, 0, 1});
  ASSERT_FALSE(no_step.ok());
  EXPECT_NE(no_step.error().message().find("-i/--stepbytes"), std::string::npos);
  EXPECT_FALSE(validate_sweep({1, std::size_t{1} << 40, 1, 1}).ok()); // a trillion sizes
  EXPECT_TRUE(validate_sweep({0, 0, 0, 2}).ok());
}

TEST(Sizes, RoundingIsReportedAsNcclTestsRounds) {
  auto rounded = rounded_sizes({8, 64, 100, 1024}, Collective::kAllGather, DataType::kFloat, 4);
  ASSERT_EQ(rounded.size(), 2u);
  EXPECT_EQ(rounded[0].requested, 8u);
  EXPECT_EQ(rounded[0].used, 0u);
  EXPECT_EQ(rounded[1].requested, 100u);
  EXPECT_EQ(rounded[1].used, 64u);
  std::string text = describe_rounding(rounded, Collective::kAllGather, DataType::kFloat, 4);
  EXPECT_EQ(text, "sizes rounded as nccl-tests does (whole 16-byte blocks per rank for all_gather "
                  "over 4 ranks): 8 -> 0, 100 -> 64");
  EXPECT_EQ(describe_rounding(rounded_sizes({7}, Collective::kAllReduce, DataType::kDouble, 2),
                              Collective::kAllReduce, DataType::kDouble, 2),
            "sizes rounded as nccl-tests does (whole 8-byte double elements): 7 -> 0");
  EXPECT_TRUE(rounded_sizes({1024}, Collective::kAllReduce, DataType::kFloat, 3).empty());
}

// Auto mode never measures host memory on a node whose GPUs it cannot use.
TEST(Collectives, TheDefaultBackendRefusesAGpuNodeItCannotUse) {
  EXPECT_EQ(*default_backend(true, 8, "8 CUDA devices visible"), BackendKind::kNccl);
  EXPECT_EQ(*default_backend(false, 0, "no CUDA device (no NVIDIA driver)"), BackendKind::kMpi);
  auto refused =
      default_backend(false, 8,
                      "8 GPU(s) on this node, but the NVIDIA driver supports CUDA 12.4, older than "
                      "every CUDA runtime found (libcudart.so.13)");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.error().message().find("the nccl backend cannot run: 8 GPU(s) on this node, "
                                           "but the NVIDIA driver supports CUDA 12.4"),
            std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().hint().find("--backend mpi"), std::string::npos);
}

} // namespace
} // namespace fabric::nccltest
