// The installed nccl.h against what the plugin assumes without including it (it declares
// its ABI itself, see exporters/nccl_profiler/profiler_abi.h): the result codes it returns
// and the data types whose names collectives.cpp knows. A newer NCCL that adds a type
// fails here, at build time, rather than counting its operations without bytes.
#include <nccl.h>

#include <gtest/gtest.h>

static_assert(ncclSuccess == 0 && ncclInternalError == 3 && ncclInvalidArgument == 4,
              "profiler_abi.h's ncclResult_t");
static_assert(ncclNumTypes == 12, "collectives.cpp names NCCL's 12 data types");
static_assert(ncclUint8 == 1 && ncclFloat8e5m2 == 11);

TEST(NcclHeader, IsTheVersionTheAbiWasReadFor) {
  // 2.28 takes ncclProfiler_v5; a different NCCL here means rereading its headers.
  EXPECT_GE(NCCL_VERSION_CODE, NCCL_VERSION(2, 27, 0));
  EXPECT_LT(NCCL_VERSION_CODE, NCCL_VERSION(2, 31, 0));
}
