// The plugin's ABI against our reading of NCCL's headers (x86-64, LP64): every struct
// NCCL hands to or takes from the plugin must have the layout NCCL's compiler gave it.
// Offsets are in bytes and come from the header lines quoted with them; a mismatch here
// means the plugin would read the wrong field of a live descriptor.
//
// Sources (NVIDIA/nccl): ext-profiler/example/nccl/profiler_v1.h, profiler_v2.h and
// profiler_v3.h (NCCL 2.23 to 2.26), src/include/plugin/profiler/profiler_v4.h at v2.27.3-1,
// profiler_v5.h at v2.28.9-1, profiler_v6.h at v2.29.2-1 (unchanged in v2.30.7-1 but for
// pid_t becoming ncclPid_t, the same int on Linux), src/include/plugin/nccl_profiler.h.
#include <cstddef>
#include <dlfcn.h>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "common/subprocess.h"
#include "exporters/nccl_profiler/profiler_abi.h"
#include "exporters/nccl_profiler/profiler_abi_v1_v3.h"

namespace {

// --- The event types and the state NCCL passes (nccl_profiler.h) ---
// "ncclProfileColl = (1 << 1)", "ncclProfileP2p = (1 << 2)", "ncclProfileKernelCh = (1 << 6)"
static_assert(ncclProfileColl == 2 && ncclProfileP2p == 4 && ncclProfileKernelCh == 64);
// "ncclProfilerKernelChStop = 22": the state whose args carry the channel's end time.
static_assert(ncclProfilerKernelChStop == 22 && sizeof(ncclProfilerEventState_t) == 4);

// --- v4 descriptor (profiler_v4.h) ---
// "uint8_t type; void* parentObj; int rank; union {...}": the union, aligned to 8, at 24.
static_assert(sizeof(ncclProfilerEventDescr_v4_t::type) == 1);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, parentObj) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, rank) == 16);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll) == 24);
// coll: "uint64_t seqNumber; const char* func; void const* sendBuff; void* recvBuff;
// size_t count; int root; const char* datatype; uint8_t nChannels; uint8_t nWarps;
// const char* algo; const char* proto;" = 80 bytes, the union's largest member.
static_assert(offsetof(ncclProfilerCollDescr_v4, func) == 8);
static_assert(offsetof(ncclProfilerCollDescr_v4, count) == 32);
static_assert(offsetof(ncclProfilerCollDescr_v4, datatype) == 48);
static_assert(offsetof(ncclProfilerCollDescr_v4, nChannels) == 56);
static_assert(sizeof(ncclProfilerCollDescr_v4) == 80);
// p2p: "const char* func; void* buff; const char* datatype; size_t count; int peer;
// uint8_t nChannels;"
static_assert(offsetof(ncclProfilerP2pDescr_v4, datatype) == 16);
static_assert(offsetof(ncclProfilerP2pDescr_v4, count) == 24);
static_assert(offsetof(ncclProfilerP2pDescr_v4, nChannels) == 36);
static_assert(sizeof(ncclProfilerP2pDescr_v4) == 40);
// kernelCh: "uint8_t channelId; uint64_t pTimer;"
static_assert(offsetof(ncclProfilerKernelChDescr, pTimer) == 8);
static_assert(sizeof(ncclProfilerKernelChDescr) == 16);
static_assert(sizeof(ncclProfilerEventDescr_v4_t) == 24 + 80);

// --- v5 descriptor (profiler_v5.h) ---
// "uint64_t type;" then the same header; coll and p2p gain "void* parentGroup; // for
// backward compatibility with v4" at their end.
static_assert(sizeof(ncclProfilerEventDescr_v5_t::type) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, rank) == 16);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2p) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh) == 24);
static_assert(offsetof(ncclProfilerCollDescr_v5, func) == 8);
static_assert(offsetof(ncclProfilerCollDescr_v5, count) == 32);
static_assert(offsetof(ncclProfilerCollDescr_v5, datatype) == 48);
static_assert(offsetof(ncclProfilerCollDescr_v5, nChannels) == 56);
static_assert(offsetof(ncclProfilerCollDescr_v5, parentGroup) == 80);
static_assert(sizeof(ncclProfilerCollDescr_v5) == 88);
static_assert(offsetof(ncclProfilerP2pDescr_v5, nChannels) == 36);
static_assert(offsetof(ncclProfilerP2pDescr_v5, parentGroup) == 40);
// collApi: "const char* func; size_t count; const char* datatype; int root; void* stream;
// bool graphCaptured;" = 48.
static_assert(sizeof(ncclProfilerCollApiDescr) == 48);
static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 24 + 88);

// --- v6 descriptor (profiler_v6.h) ---
// v5's members unchanged, plus ceColl: "uint64_t seqNumber; const char* func; void const*
// sendBuff; void* recvBuff; size_t count; int root; const char* datatype; const char*
// syncStrategy; bool intraBatchSync; uint32_t batchSize; uint32_t numBatches; uint32_t
// ceSeqNum; void* stream;" = 88, no larger than coll: the descriptor keeps v5's size.
static_assert(offsetof(ncclProfilerCeCollDescr, syncStrategy) == 56);
static_assert(offsetof(ncclProfilerCeCollDescr, batchSize) == 68);
static_assert(offsetof(ncclProfilerCeCollDescr, stream) == 80);
static_assert(sizeof(ncclProfilerCeCollDescr) == 88);
static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v6_t, kernelCh) == 24);
static_assert(sizeof(ncclProfilerEventDescr_v6_t) == 24 + 88);

// --- state args, the same union in v4 to v6 ---
// "struct { uint64_t pTimer; } kernelCh;" among members of at most 8 bytes.
static_assert(offsetof(ncclProfilerEventStateArgs_t, kernelCh.pTimer) == 0);
static_assert(sizeof(ncclProfilerEventStateArgs_t) == 8);

// --- v1 to v3 descriptors (ext-profiler/example/nccl/profiler_v1.h .. v3.h) ---
// "uint8_t type; void* parentObj; int rank; union {...}", as in v4.
static_assert(offsetof(ncclProfilerEventDescr_v1_t, rank) == 16);
static_assert(offsetof(ncclProfilerEventDescr_v1_t, coll) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v2_t, coll) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v3_t, coll) == 24);
// v1 coll: "const char* name; uint64_t commHash; uint64_t seqNumber; uint8_t func; void
// const* sendBuff; void* recvBuff; size_t count; int root; uint8_t datatype; uint32_t op;
// size_t trafficBytes; uint8_t nMaxChannels; uint8_t nWarps; uint8_t algo; uint8_t proto;
// int isCollnet; int isNvls;" = 96 with its tail padding.
static_assert(offsetof(ncclProfilerCollDescr_v1, commHash) == 8);
static_assert(offsetof(ncclProfilerCollDescr_v1, func) == 24);
static_assert(offsetof(ncclProfilerCollDescr_v1, count) == 48);
static_assert(offsetof(ncclProfilerCollDescr_v1, datatype) == 60);
static_assert(offsetof(ncclProfilerCollDescr_v1, isNvls) == 88);
static_assert(sizeof(ncclProfilerCollDescr_v1) == 96);
// v1 p2p: "const char* name; uint64_t commHash; uint8_t func; void* buff; uint8_t
// datatype; size_t count; int peer;"
static_assert(offsetof(ncclProfilerP2pDescr_v1, func) == 16);
static_assert(offsetof(ncclProfilerP2pDescr_v1, datatype) == 32);
static_assert(offsetof(ncclProfilerP2pDescr_v1, count) == 40);
static_assert(sizeof(ncclProfilerEventDescr_v1_t) == 24 + 96);
// v2 coll: as v1 up to root, then "const char* datatype; size_t trafficBytes; uint8_t
// nMaxChannels; uint8_t nWarps; const char* algo; const char* proto;" and func a string.
static_assert(offsetof(ncclProfilerCollDescr_v2, func) == 24);
static_assert(offsetof(ncclProfilerCollDescr_v2, count) == 48);
static_assert(offsetof(ncclProfilerCollDescr_v2, datatype) == 64);
static_assert(offsetof(ncclProfilerCollDescr_v2, proto) == 96);
static_assert(sizeof(ncclProfilerEventDescr_v2_t) == 24 + 104);
// v2 and v3 p2p: "const char* name; uint64_t commHash; const char* func; void* buff;
// const char* datatype; size_t count; int peer;"
static_assert(offsetof(ncclProfilerP2pDescr_v2, commHash) == 8);
static_assert(offsetof(ncclProfilerP2pDescr_v2, func) == 16);
static_assert(offsetof(ncclProfilerP2pDescr_v2, datatype) == 32);
static_assert(offsetof(ncclProfilerP2pDescr_v2, count) == 40);
// v3 coll: v2's without trafficBytes.
static_assert(offsetof(ncclProfilerCollDescr_v3, datatype) == 64);
static_assert(offsetof(ncclProfilerCollDescr_v3, nMaxChannels) == 72);
static_assert(sizeof(ncclProfilerCollDescr_v3) == 96);
static_assert(sizeof(ncclProfilerEventDescr_v3_t) == 24 + 96);
// v1 to v3 state args: "struct { size_t transSize; int steps; } proxyOp;" is the largest.
static_assert(sizeof(ncclProfilerEventStateArgs_v1_t) == 16);

// --- the function tables: "const char* name;" and five function pointers ---
template <typename Table> constexpr bool table_layout() {
  return offsetof(Table, name) == 0 && offsetof(Table, init) == 8 &&
         offsetof(Table, startEvent) == 16 && offsetof(Table, stopEvent) == 24 &&
         offsetof(Table, recordEventState) == 32 && offsetof(Table, finalize) == 40 &&
         sizeof(Table) == 48;
}
static_assert(table_layout<ncclProfiler_v1_t>());
static_assert(table_layout<ncclProfiler_v2_t>());
static_assert(table_layout<ncclProfiler_v3_t>());
static_assert(table_layout<ncclProfiler_v4_t>());
static_assert(table_layout<ncclProfiler_v5_t>());
static_assert(table_layout<ncclProfiler_v6_t>());

// Each version's symbol is exported, under its own name, with NCCL's table filled in.
class ExportedSymbols : public ::testing::Test {
protected:
  void SetUp() override {
    handle_ = ::dlopen(FABRIC_NCCL_PROFILER_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
  }
  void TearDown() override {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  template <typename Table> void expect_table(const char* symbol) {
    auto* table = static_cast<Table*>(::dlsym(handle_, symbol));
    ASSERT_NE(table, nullptr) << symbol << " is not exported";
    EXPECT_STREQ(table->name, "fabric");
    EXPECT_NE(table->init, nullptr);
    EXPECT_NE(table->startEvent, nullptr);
    EXPECT_NE(table->stopEvent, nullptr);
    EXPECT_NE(table->recordEventState, nullptr);
    EXPECT_NE(table->finalize, nullptr);
  }
  void* handle_ = nullptr;
};

TEST_F(ExportedSymbols, EachVersionNcclLooksFor) {
  expect_table<ncclProfiler_v1_t>("ncclProfiler_v1");
  expect_table<ncclProfiler_v2_t>("ncclProfiler_v2");
  expect_table<ncclProfiler_v3_t>("ncclProfiler_v3");
  expect_table<ncclProfiler_v4_t>("ncclProfiler_v4");
  expect_table<ncclProfiler_v5_t>("ncclProfiler_v5");
  expect_table<ncclProfiler_v6_t>("ncclProfiler_v6");
}

TEST_F(ExportedSymbols, NothingElseLeavesTheLibrary) {
  // No version NCCL has not defined yet.
  for (const char* absent : {"ncclProfiler_v0", "ncclProfiler_v7", "ncclProfiler"}) {
    EXPECT_EQ(::dlsym(handle_, absent), nullptr) << absent;
  }
  // libstdc++ is linked in (except in sanitizer builds) and kept local, so the process's
  // own never binds to it: a libstdc++ symbol found through the handle (dlsym searches
  // the library's dependencies too) is never the plugin's.
  for (const char* cxx : {"_ZSt4cout", "_ZNSt6thread4joinEv", "__cxa_throw"}) {
    void* symbol = ::dlsym(handle_, cxx);
    Dl_info where{};
    if (symbol != nullptr && ::dladdr(symbol, &where) != 0) {
      EXPECT_EQ(std::string(where.dli_fname).find("libnccl-profiler-fabric"), std::string::npos)
          << cxx << " is exported by the plugin";
    }
  }
}

// A training image has libc and little else: the plugin needs nothing beyond glibc's own
// libraries (libstdc++ and libgcc are linked in), or NCCL's dlopen fails in the job.
TEST(PluginDependencies, OnlyGlibcIsNeeded) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "sanitizer builds link the plugin to the sanitizer runtimes";
#else
  auto dynamic = fabric::run_subprocess({"readelf", "--dynamic", FABRIC_NCCL_PROFILER_PLUGIN}, {});
  ASSERT_TRUE(dynamic.ok()) << dynamic.error().message();
  ASSERT_EQ(dynamic->exit_status, 0) << dynamic->stderr_text;
  const std::regex needed(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])");
  const std::regex glibc(R"(lib(c|m|dl|pthread|rt)\.so\.\d+|ld-linux-x86-64\.so\.2)");
  int libraries = 0;
  for (std::sregex_iterator it(dynamic->stdout_text.begin(), dynamic->stdout_text.end(), needed);
       it != std::sregex_iterator(); ++it) {
    ++libraries;
    EXPECT_TRUE(std::regex_match((*it)[1].str(), glibc)) << "the plugin needs " << (*it)[1];
  }
  EXPECT_GT(libraries, 0) << dynamic->stdout_text;
#endif
}

} // namespace
