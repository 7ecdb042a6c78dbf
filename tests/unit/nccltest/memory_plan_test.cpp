// Memory planning before any rank allocates: what a run's buffers take, and the largest
// size reduced to fit as nccl-tests does ("Reducing maxBytes to ...") or a refusal.
#include "nccltest/memory_plan.h"
#include "nccltest/rank_info.h"

#include <gtest/gtest.h>

namespace fabric::nccltest {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

Options run_of(Collective c, std::size_t min_bytes, std::size_t max_bytes) {
  Options o;
  o.collective = c;
  o.sweep.min_bytes = min_bytes;
  o.sweep.max_bytes = max_bytes;
  return o;
}

TEST(MemoryPlan, TwoBuffersOfTheLargerSizeAsNcclTestsAllocates) {
  // all_gather's receive buffer holds every rank's part: -e is its size.
  Options o = run_of(Collective::kAllGather, 8, 8 * kGiB);
  EXPECT_EQ(buffer_size(o, o.sweep.max_bytes, 8), 8 * kGiB);
  EXPECT_EQ(buffer_bytes_per_rank(o, BackendKind::kNccl, o.sweep.max_bytes, 8), 16 * kGiB);
  // all_reduce: send and receive both -e.
  Options r = run_of(Collective::kAllReduce, 8, kGiB);
  EXPECT_EQ(buffer_bytes_per_rank(r, BackendKind::kNccl, r.sweep.max_bytes, 4), 2 * kGiB);
}

TEST(MemoryPlan, PairsAllocateASecondSetForThePairsCommunicator) {
  Options o = run_of(Collective::kAllReduce, 8, kGiB);
  o.pairs = true;
  EXPECT_EQ(buffer_bytes_per_rank(o, BackendKind::kNccl, o.sweep.max_bytes, 8), 4 * kGiB);
  // --pairs-bytes larger than -e sizes both sets.
  o.pairs_bytes = 2 * kGiB;
  EXPECT_EQ(buffer_bytes_per_rank(o, BackendKind::kNccl, o.sweep.max_bytes, 8), 8 * kGiB);
}

TEST(MemoryPlan, ARunThatFitsIsLeftAlone) {
  Options o = run_of(Collective::kAllReduce, 8, kGiB);
  auto plan = plan_memory(o, BackendKind::kNccl, 8, 80 * kGiB, "node-a's GPU");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->max_bytes, kGiB);
  EXPECT_EQ(plan->note, "");
  // Unknown memory: nothing to plan with.
  auto unknown = plan_memory(run_of(Collective::kAllReduce, 8, 64 * kGiB), BackendKind::kNccl, 8,
                             std::nullopt, "");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->max_bytes, 64 * kGiB);
}

TEST(MemoryPlan, TheLargestSizeIsReducedToWhatFitsBesideNcclsReserve) {
  // 80 GiB free, 1 GiB kept for NCCL: two all-reduce buffers of at most 39.5 GiB.
  Options o = run_of(Collective::kAllReduce, 8, 64 * kGiB);
  auto plan = plan_memory(o, BackendKind::kNccl, 8, 80 * kGiB, "node-a's GPU");
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const uint64_t expected = (80 * kGiB - kNcclReserveBytes) / 2;
  EXPECT_EQ(plan->max_bytes, expected);
  EXPECT_EQ(plan->note,
            "Reducing maxBytes to " + std::to_string(expected) + " due to memory limitation");
  EXPECT_LE(buffer_bytes_per_rank(o, BackendKind::kNccl, plan->max_bytes, 8) + kNcclReserveBytes,
            80 * kGiB);
  EXPECT_GT(buffer_bytes_per_rank(o, BackendKind::kNccl, plan->max_bytes + 2, 8) +
                kNcclReserveBytes,
            80 * kGiB);
}

TEST(MemoryPlan, HostMemoryCountsMpisTemporaryAndKeepsAReserve) {
  // MPI's collectives allocate a temporary of the message size beside the two buffers.
  Options o = run_of(Collective::kAllReduce, 8, kGiB);
  EXPECT_EQ(buffer_bytes_per_rank(o, BackendKind::kMpi, o.sweep.max_bytes, 4), 3 * kGiB);
  EXPECT_EQ(buffer_bytes_per_rank(o, BackendKind::kNccl, o.sweep.max_bytes, 4), 2 * kGiB);
  o.pairs = true;
  EXPECT_EQ(buffer_bytes_per_rank(o, BackendKind::kMpi, o.sweep.max_bytes, 4), 6 * kGiB);
  // The reserve: an eighth of the room, at least 256 MiB.
  EXPECT_EQ(host_reserve_bytes(512 * kMiB), 256 * kMiB);
  EXPECT_EQ(host_reserve_bytes(8 * kGiB), kGiB);
  EXPECT_EQ(host_reserve_bytes(0), 256 * kMiB);
}

TEST(MemoryPlan, HostMemoryFitsThreeBuffersBesideTheReserve) {
  // The lead's 23 GiB machine, 2 ranks: 11.5 GiB a rank, 1.44 GiB kept, three buffers in
  // the rest; MemAvailable over two buffers alone had the ranks OOM-killed.
  const uint64_t room = 23 * kGiB / 2;
  Options o = run_of(Collective::kAllReduce, 8, 8 * kGiB);
  auto plan = plan_memory(o, BackendKind::kMpi, 2, room, "node-a (memory available per rank)");
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const uint64_t expected = (room - room / 8) / 3;
  EXPECT_EQ(plan->max_bytes, expected);
  EXPECT_EQ(plan->note,
            "Reducing maxBytes to " + std::to_string(expected) + " due to memory limitation");
  // A 1 GiB pod with 2 ranks: 512 MiB a rank, 256 MiB kept, three buffers of 85 MiB.
  auto pod = plan_memory(o, BackendKind::kMpi, 2, 512 * kMiB, "pod");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->max_bytes, 256 * kMiB / 3);
  // Less room than the reserve: the smallest size is refused with the figures.
  Options small = run_of(Collective::kAllReduce, 8, kGiB);
  auto refused = plan_memory(small, BackendKind::kMpi, 2, 200 * kMiB, "pod-b");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("8 needs 24 B of buffers per rank and 256 MiB kept "
                                           "for MPI, the program and the kernel, but pod-b has "
                                           "200 MiB"),
            std::string::npos)
      << refused.error().message();
}

TEST(MemoryPlan, ASmallestSizeThatCannotFitIsRefusedWithTheFigures) {
  Options o = run_of(Collective::kAllReduce, kGiB, 4 * kGiB);
  auto plan = plan_memory(o, BackendKind::kNccl, 8, 2 * kGiB, "node-b's GPU with the least free");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(plan.error().message().find("1073741824 needs 2 GiB of buffers per rank and 1 GiB "
                                        "kept for NCCL's own use, but node-b's GPU with the "
                                        "least free has 2 GiB"),
            std::string::npos)
      << plan.error().message();
}

} // namespace
} // namespace fabric::nccltest

namespace fabric::nccltest {
namespace {

RankFacts gpu_rank(int rank, int device, uint64_t free_bytes) {
  RankFacts f;
  f.info.rank = rank;
  f.info.host = "node1";
  f.info.device = device;
  f.host_id = "node1/boot";
  f.free_memory = free_bytes;
  return f;
}

// -g 4 from one process: four ranks, one per GPU, described and exchanged as one process's
// lines; the plan takes the GPU with the least memory free, per GPU (a GPU's memory is its
// rank's alone, however many GPUs the process drives).
TEST(MemoryPlan, SeveralGpusOfOneProcessArePlannedPerGpu) {
  std::vector<RankFacts> mine = {gpu_rank(0, 0, 80 * kGiB), gpu_rank(1, 1, 80 * kGiB),
                                 gpu_rank(2, 2, 10 * kGiB), gpu_rank(3, 3, 80 * kGiB)};
  auto decoded = decode_process_facts(encode_process_facts(mine), 4);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message();
  ASSERT_EQ(decoded->size(), 4u);
  EXPECT_EQ((*decoded)[2].info.device, 2);
  EXPECT_EQ(place_ranks(*decoded), 1);
  EXPECT_EQ((*decoded)[3].info.local_rank, 3);
  std::vector<NodeResources> nodes = node_resources(*decoded, BackendKind::kNccl);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].ranks, 4);
  EXPECT_EQ(nodes[0].memory_bytes, 10 * kGiB);
  Options o = run_of(Collective::kAllReduce, 8, 8 * kGiB);
  auto plan = plan_memory(o, BackendKind::kNccl, 4, nodes[0].memory_bytes, "node1's GPU");
  ASSERT_TRUE(plan.ok());
  EXPECT_LE(2 * plan->max_bytes, 9 * kGiB); // two buffers and NCCL's 1 GiB on the 10 GiB GPU
  EXPECT_NE(plan->note.find("Reducing maxBytes"), std::string::npos);
}

TEST(MemoryPlan, AProcessWithAnotherNumberOfGpusIsRefused) {
  std::vector<RankFacts> two = {gpu_rank(0, 0, kGiB), gpu_rank(1, 1, kGiB)};
  auto decoded = decode_process_facts(encode_process_facts(two), 4);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().message().find("2 ranks from a process instead of 4"),
            std::string::npos)
      << decoded.error().message();
  EXPECT_FALSE(decode_process_facts(encode_process_facts(two), 1).ok());
  EXPECT_FALSE(decode_process_facts("{\"rank\":0}", 1).ok()); // no line end
}

} // namespace
} // namespace fabric::nccltest
