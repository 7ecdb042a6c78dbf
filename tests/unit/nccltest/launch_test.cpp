// How a rank learns how it was started, and which GPU it drives.
#include <gtest/gtest.h>

#include <map>

#include "nccltest/fault.h"
#include "nccltest/gpu_map.h"
#include "nccltest/launch.h"

namespace fabric::nccltest {
namespace {

GetEnv env_of(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(Launch, AloneIsASingleProcess) {
  auto l = detect_launch(env_of({}), true);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->kind, LaunchKind::kSingle);
  EXPECT_EQ(l->world_size, 1);
}

TEST(Launch, MpirunIsRecognised) {
  auto l = detect_launch(env_of({{"OMPI_COMM_WORLD_SIZE", "4"},
                                 {"OMPI_COMM_WORLD_RANK", "2"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}),
                         true);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->kind, LaunchKind::kMpirun);
  EXPECT_EQ(l->rank, 2);
  EXPECT_EQ(l->world_size, 4);
  EXPECT_EQ(l->local_rank, 1);
}

TEST(Launch, MpirunWithoutMpiInTheBuildSaysSo) {
  auto l =
      detect_launch(env_of({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "0"}}), false);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code(), ErrorCode::kNotBuilt);
  EXPECT_NE(l.error().message().find("OMPI_COMM_WORLD_SIZE=4"), std::string::npos);
  EXPECT_NE(l.error().message().find("every rank would run alone"), std::string::npos);
  EXPECT_NE(l.error().hint().find("WITH_MPI=ON"), std::string::npos);
  auto pmix = detect_launch(env_of({{"PMIX_RANK", "3"}}), false);
  ASSERT_FALSE(pmix.ok());
  EXPECT_NE(pmix.error().message().find("PMIX_RANK=3"), std::string::npos);
}

TEST(Launch, RendezvousFromTorchrunVariables) {
  auto l = detect_launch(env_of({{"RANK", "3"},
                                 {"WORLD_SIZE", "8"},
                                 {"LOCAL_RANK", "1"},
                                 {"MASTER_ADDR", "job-0.svc"},
                                 {"MASTER_PORT", "29500"}}),
                         true);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->kind, LaunchKind::kRendezvous);
  EXPECT_EQ(l->rank, 3);
  EXPECT_EQ(l->world_size, 8);
  EXPECT_EQ(l->local_rank, 1);
  EXPECT_EQ(l->master_addr, "job-0.svc");
  EXPECT_EQ(l->master_port, 29500);
}

TEST(Launch, IndexedJobGivesTheRankWhenRankIsAbsent) {
  auto l = detect_launch(env_of({{"JOB_COMPLETION_INDEX", "5"},
                                 {"WORLD_SIZE", "6"},
                                 {"MASTER_ADDR", "10.0.0.1"},
                                 {"MASTER_PORT", "2000"}}),
                         false);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->rank, 5);
  EXPECT_EQ(l->evidence, "JOB_COMPLETION_INDEX=5 WORLD_SIZE=6");
}

TEST(Launch, AMissingOrBadVariableIsNamed) {
  auto no_addr =
      detect_launch(env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}), true);
  ASSERT_FALSE(no_addr.ok());
  EXPECT_EQ(no_addr.error().code(), ErrorCode::kInvalidEnvironment);
  EXPECT_EQ(no_addr.error().operation(), "MASTER_ADDR");
  auto no_port =
      detect_launch(env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}), true);
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.error().operation(), "MASTER_PORT");
  auto no_rank = detect_launch(env_of({{"WORLD_SIZE", "2"}}), true);
  ASSERT_FALSE(no_rank.ok());
  EXPECT_EQ(no_rank.error().operation(), "RANK");
  auto no_world = detect_launch(env_of({{"RANK", "1"}}), true);
  ASSERT_FALSE(no_world.ok());
  EXPECT_EQ(no_world.error().operation(), "WORLD_SIZE");
  auto too_big = detect_launch(
      env_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}),
      true);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().message().find("not below WORLD_SIZE"), std::string::npos);
  auto bad_port = detect_launch(
      env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "http"}}),
      true);
  ASSERT_FALSE(bad_port.ok());
  EXPECT_NE(bad_port.error().message().find("'http'"), std::string::npos);
}

TEST(Launch, RankHintPicksWhoPrints) {
  EXPECT_EQ(rank_hint(env_of({})), 0);
  EXPECT_EQ(rank_hint(env_of({{"OMPI_COMM_WORLD_RANK", "3"}})), 3);
  EXPECT_EQ(rank_hint(env_of({{"JOB_COMPLETION_INDEX", "2"}})), 2);
  EXPECT_EQ(rank_hint(env_of({{"RANK", "junk"}})), 0);
}

// nccl-tests (src/common.cu, one thread, one GPU per process):
//   cudaDev = (NCCL_TESTS_DEVICE set ? atoi(NCCL_TESTS_DEVICE) : localRank) + 0
TEST(GpuMap, TheLocalRankPicksTheDeviceAsInNcclTests) {
  EXPECT_EQ(*device_for_rank(0, 8, nullptr), 0);
  EXPECT_EQ(*device_for_rank(5, 8, nullptr), 5);
  EXPECT_EQ(*device_for_rank(0, 1, nullptr), 0);
  EXPECT_EQ(*device_for_rank(3, 8, ""), 3); // set but empty: as unset
}

TEST(GpuMap, NcclTestsDeviceIsTheDeviceOfEveryRankNotAnOffset) {
  EXPECT_EQ(*device_for_rank(1, 8, "4"), 4);
  EXPECT_EQ(*device_for_rank(7, 8, "4"), 4);
  // One GPU per rank (CUDA_VISIBLE_DEVICES per rank, pods sharing a host name): every
  // local rank drives its own device 0.
  for (int local_rank = 0; local_rank < 4; ++local_rank)
    EXPECT_EQ(*device_for_rank(local_rank, 1, "0"), 0) << "local rank " << local_rank;
}

// nccl-tests with -g G -t T (src/common.cu's run()): process-local GPU i of the process with
// local rank L is (NCCL_TESTS_DEVICE set ? NCCL_TESTS_DEVICE : L * T * G) + i.
TEST(GpuMap, AProcessWithSeveralGpusDrivesConsecutiveDevicesAsInNcclTests) {
  using Devices = std::vector<int>;
  EXPECT_EQ(*devices_for_process(0, 8, 8, nullptr), (Devices{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(*devices_for_process(1, 4, 8, nullptr), (Devices{4, 5, 6, 7})); // 2 processes -g 4
  EXPECT_EQ(*devices_for_process(1, 2, 8, "4"), (Devices{4, 5}));
  auto beyond = devices_for_process(1, 8, 8, nullptr);
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.error().message().find("local process 1 drives devices 8 to 15 (-g x -t = 8 "
                                          "per process, as nccl-tests counts them) but only 8 "
                                          "CUDA devices are visible"),
            std::string::npos)
      << beyond.error().message();
  auto named = devices_for_process(0, 4, 8, "6");
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.error().message().find("names device 6 as the first of 4"), std::string::npos)
      << named.error().message();
}

TEST(GpuMap, ADeviceBeyondTheVisibleOnesIsRefusedWithAdvice) {
  auto single = device_for_rank(1, 1, nullptr);
  ASSERT_FALSE(single.ok());
  EXPECT_NE(single.error().message().find("local rank 1 uses device 1 (as nccl-tests does) but "
                                          "only 1 CUDA device is visible"),
            std::string::npos)
      << single.error().message();
  EXPECT_NE(single.error().hint().find("NCCL_TESTS_DEVICE=0"), std::string::npos);
  auto too_many = device_for_rank(8, 8, nullptr);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().hint().find("at most one rank per visible GPU"), std::string::npos);
  auto named = device_for_rank(0, 2, "2");
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.error().message().find("names device 2 but only 2 CUDA devices are visible"),
            std::string::npos)
      << named.error().message();
  EXPECT_FALSE(device_for_rank(0, 0, nullptr).ok());
  EXPECT_FALSE(device_for_rank(0, 8, "x").ok());
  EXPECT_FALSE(device_for_rank(0, 8, "-1").ok());
}

TEST(Fault, PlansParseAndRefuseGarbage) {
  auto plan = parse_fault_plan("corrupt=2,stall=1@1M,slow-pair=3-1,slow-node=4");
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->corrupt_rank, 2);
  EXPECT_EQ(plan->stall_rank, 1);
  EXPECT_EQ(plan->stall_from_bytes, 1u << 20);
  EXPECT_EQ(plan->slow_pair, std::make_pair(1, 3));
  EXPECT_EQ(plan->slow_node, 4);
  EXPECT_TRUE(plan->any());
  EXPECT_FALSE(parse_fault_plan("")->any());
  for (const char* bad :
       {"corrupt", "corrupt=x", "slow-pair=2-2", "explode=1", "stall=1@lots", "slow-node=x"}) {
    auto r = parse_fault_plan(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().operation(), kFaultEnv);
  }
}

} // namespace
} // namespace fabric::nccltest
