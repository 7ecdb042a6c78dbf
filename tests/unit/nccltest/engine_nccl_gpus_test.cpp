// The nccl engine driving several GPUs from one process (nccl-tests' -g and -t), buffer
// registration (-R) and ncclMemAlloc, over the recording stand-in for NCCL and CUDA
// (fake_nccl.h; no GPU here):
//   - the process's communicators are created in one NCCL group, one rank per GPU;
//   - each operation is launched on every GPU inside one group, and waited for on every
//     stream; -G captures every GPU's stream and instantiates every graph before the
//     barrier; the checks address the local rank's own GPU, stream and buffer;
//   - the watchdog's order aborts every communicator, from the owning thread only, and
//     nothing touches one afterwards; with -t each thread owns its own GPUs' communicators
//     from the engine's making to its end;
//   - -R 1 registers both buffers of every GPU with ncclCommRegister and deregisters them
//     before freeing; -R 2 uses symmetric windows where NCCL has them, else falls back as
//     nccl-tests does; buffers come from ncclMemAlloc where NCCL has it.
// What a GPU run adds (scripts/gpu_check.sh): that a real NCCL accepts these sequences on
// every visible GPU, and that the data of every rank checks clean.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "nccltest/abort_request.h"
#include "nccltest/engine_nccl.h"
#include "nccltest/engine_threads.h"
#include "tests/unit/nccltest/fake_nccl.h"

namespace fabric::nccltest::nccl {
namespace {

using fake::Call;
using fake::fake_comm;
using Names = std::vector<std::string>;

CollectiveCall all_reduce_over(int nranks) {
  CollectiveCall call;
  call.counts = collective_counts(Collective::kAllReduce, 64, 4, nranks);
  return call;
}

class NcclEngineGpus : public testing::Test {
protected:
  void SetUp() override {
    fake::g_state = &fake_;
    fake_.nranks = 4;
  }
  void TearDown() override { fake::g_state = nullptr; }

  // Ranks 0 and 1 of a 4-rank communicator, on devices 2 and 3 of this process.
  std::unique_ptr<Engine> two_gpus(const EngineConfig& config = {}) {
    auto engine =
        make_nccl_engine(api_, {Member{fake_comm(0), 2}, Member{fake_comm(1), 3}}, config);
    EXPECT_TRUE(engine.ok()) << engine.error().message();
    return engine.ok() ? std::move(*engine) : nullptr;
  }
  std::vector<Call> calls() {
    std::lock_guard lock(fake_.mutex);
    return fake_.calls;
  }
  void forget() {
    std::lock_guard lock(fake_.mutex);
    fake_.calls.clear();
  }
  // Names, with the communicator for the calls that have one ("ncclAllReduce@1").
  Names names() {
    Names out;
    for (const Call& c : calls()) {
      if (c.name == "cudaMalloc" || c.name == "cudaFree" || c.name == "ncclCommGetAsyncError")
        continue;
      out.push_back(c.comm >= 0     ? c.name + "@" + std::to_string(c.comm)
                    : c.stream >= 0 ? c.name + "#" + std::to_string(c.stream)
                                    : c.name);
    }
    return out;
  }
  fake::State fake_;
  Api api_ = fake::api();
};

TEST_F(NcclEngineGpus, AProcessCreatesOneCommunicatorPerGpuInOneNcclGroup) {
  ncclUniqueId id{};
  // Process 1 of two, -g 4: ranks 4 to 7 of 8, on devices 0 to 3.
  auto comms = init_comms(api_, id, 8, 4, {0, 1, 2, 3});
  ASSERT_TRUE(comms.ok()) << comms.error().message();
  EXPECT_EQ(comms->size(), 4u);
  std::vector<Call> made = calls();
  ASSERT_EQ(made.size(), 6u);
  EXPECT_EQ(made.front().name, "ncclGroupStart");
  EXPECT_EQ(made.back().name, "ncclGroupEnd");
  for (int i = 0; i < 4; ++i) {
    const Call& c = made[static_cast<std::size_t>(i) + 1];
    EXPECT_EQ(c.name, "ncclCommInitRankConfig");
    EXPECT_EQ(c.rank, 4 + i);
    EXPECT_EQ(c.device, i) << "rank " << c.rank << " created on the wrong device";
  }
}

TEST_F(NcclEngineGpus, EachOperationIsLaunchedOnEveryGpuInOneGroupAndWaitedForOnEveryStream) {
  auto engine = two_gpus();
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->rank(), 0);
  EXPECT_EQ(engine->local_ranks(), 2);
  EXPECT_EQ(engine->size(), 4);
  fake_.stream_busy = false;
  forget();
  ASSERT_TRUE(engine->run_once(all_reduce_over(4)).ok());
  EXPECT_EQ(names(), (Names{"ncclGroupStart", "ncclAllReduce@0", "ncclAllReduce@1", "ncclGroupEnd",
                            "wait#0", "wait#1"}));
}

TEST_F(NcclEngineGpus, GraphsOfEveryGpuAreInstantiatedBeforeTheBarrierAndLaunchedPerGpu) {
  auto engine = two_gpus();
  ASSERT_NE(engine, nullptr);
  fake_.stream_busy = false;
  forget();
  TimingOptions timing;
  timing.iters = 1;
  timing.graph_launches = 2;
  auto seconds = engine->timed_run(all_reduce_over(4), timing);
  ASSERT_TRUE(seconds.ok()) << seconds.error().message();
  const Names group = {"ncclGroupStart", "ncclAllReduce@0", "ncclAllReduce@1", "ncclGroupEnd"};
  Names expected = group;
  expected.insert(expected.end(),
                  {"wait#0", "wait#1", "cudaStreamBeginCapture#0", "cudaStreamBeginCapture#1"});
  expected.insert(expected.end(), group.begin(), group.end());
  expected.insert(expected.end(), {"cudaStreamEndCapture#0",
                                   "cudaStreamEndCapture#1",
                                   "cudaGraphInstantiate",
                                   "cudaGraphInstantiate",
                                   "ncclGroupStart",
                                   "barrier@0",
                                   "barrier@1",
                                   "ncclGroupEnd",
                                   "wait#0",
                                   "wait#1",
                                   "cudaEventRecord#0",
                                   "cudaEventRecord#1",
                                   "cudaGraphLaunch#0",
                                   "cudaGraphLaunch#1",
                                   "cudaGraphLaunch#0",
                                   "cudaGraphLaunch#1",
                                   "cudaEventRecord#0",
                                   "cudaEventRecord#1",
                                   "wait#0",
                                   "wait#1"});
  EXPECT_EQ(names(), expected);
}

TEST_F(NcclEngineGpus, ChecksAddressTheLocalRanksOwnGpuStreamAndPlace) {
  auto engine = two_gpus();
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->allocate(256, 256).ok());
  std::vector<Call> allocated = calls();
  fake_.stream_busy = false;
  forget();
  CollectiveCall call = all_reduce_over(4);
  call.in_place = true;
  call.local = 1; // rank 1: in place, its input is its own output
  std::vector<std::byte> bytes(16);
  ASSERT_TRUE(engine->copy_in(call, Engine::Region::kInput, 0, bytes).ok());
  std::vector<Call> copied = calls();
  ASSERT_FALSE(copied.empty());
  EXPECT_EQ(copied.front().name, "cudaMemcpyAsync");
  EXPECT_EQ(copied.front().stream, 1) << "not the local rank's stream";
  // Device 3's receive buffer is the last of the four buffers (after each GPU's flag).
  const void* recv3 = nullptr;
  for (const Call& c : allocated)
    if (c.name == "cudaMalloc" && c.device == 3) recv3 = c.pointer;
  EXPECT_EQ(copied.front().pointer, recv3);
  call.local = 2;
  auto beyond = engine->copy_in(call, Engine::Region::kInput, 0, bytes);
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.error().message().find("local rank 2 of 2"), std::string::npos);
}

TEST_F(NcclEngineGpus, AnOrderFromAnotherThreadAbortsEveryCommunicatorFromTheOwner) {
  AbortRequest request;
  auto engine = two_gpus();
  ASSERT_NE(engine, nullptr);
  engine->poll_aborts(&request);
  const std::thread::id owner = std::this_thread::get_id();
  std::thread watchdog([&] {
    while (fake_.async_queries.load() == 0)
      std::this_thread::yield();
    request.post(5, "watchdog: rank 3 is behind every other rank");
  });
  Result<void> ran = engine->run_once(all_reduce_over(4));
  watchdog.join();
  ASSERT_FALSE(ran.ok());
  EXPECT_NE(ran.error().message().find("aborted (ncclCommAbort)"), std::string::npos);
  engine.reset();
  std::vector<Call> all = calls();
  Names aborted;
  bool after_abort = false;
  for (const Call& c : all) {
    EXPECT_EQ(c.thread, owner) << c.name << " was called from another thread";
    if (c.name == "ncclCommAbort") {
      aborted.push_back(c.name + "@" + std::to_string(c.comm));
      after_abort = true;
    } else if (after_abort) {
      EXPECT_EQ(c.comm, -1) << c.name << " on a communicator after ncclCommAbort";
    }
  }
  EXPECT_EQ(aborted, (Names{"ncclCommAbort@0", "ncclCommAbort@1"}));
}

TEST_F(NcclEngineGpus, RegistrationOneRegistersBothBuffersOfEveryGpuAndUndoesItBeforeFreeing) {
  fake::add_mem_alloc(api_);
  fake::add_registration(api_);
  EngineConfig config;
  config.registration = Registration::kLocal;
  auto engine = two_gpus(config);
  ASSERT_NE(engine, nullptr);
  forget();
  ASSERT_TRUE(engine->allocate(1024, 1024).ok());
  std::vector<const void*> allocated;
  Names registered;
  for (const Call& c : calls()) {
    if (c.name == "ncclMemAlloc") allocated.push_back(c.pointer);
    if (c.name == "ncclCommRegister") {
      registered.push_back(c.name + "@" + std::to_string(c.comm));
      EXPECT_NE(std::find(allocated.begin(), allocated.end(), c.pointer), allocated.end());
    }
  }
  EXPECT_EQ(allocated.size(), 4u) << "send and receive buffers of two GPUs, from ncclMemAlloc";
  EXPECT_EQ(registered, (Names{"ncclCommRegister@0", "ncclCommRegister@0", "ncclCommRegister@1",
                               "ncclCommRegister@1"}));
  forget();
  engine.reset();
  Names teardown;
  for (const Call& c : calls())
    if (c.name != "cudaFree")
      teardown.push_back(c.name + (c.comm >= 0 ? "@" + std::to_string(c.comm) : ""));
  EXPECT_EQ(teardown,
            (Names{"ncclCommDeregister@0", "ncclCommDeregister@0", "ncclMemFree", "ncclMemFree",
                   "ncclCommDeregister@1", "ncclCommDeregister@1", "ncclMemFree", "ncclMemFree",
                   "ncclCommDestroy@0", "ncclCommDestroy@1"}));
}

TEST_F(NcclEngineGpus, RegistrationTwoMakesSymmetricWindows) {
  fake::add_registration(api_);
  fake::add_windows(api_);
  EngineConfig config;
  config.registration = Registration::kSymmetric;
  auto engine = two_gpus(config);
  ASSERT_NE(engine, nullptr);
  forget();
  ASSERT_TRUE(engine->allocate(1024, 1024).ok());
  int windows = 0;
  for (const Call& c : calls()) {
    windows += c.name == "ncclCommWindowRegister(symmetric)";
    EXPECT_NE(c.name, "ncclCommRegister");
  }
  EXPECT_EQ(windows, 4);
  forget();
  engine.reset();
  int undone = 0;
  for (const Call& c : calls())
    undone += c.name == "ncclCommWindowDeregister";
  EXPECT_EQ(undone, 4);
}

TEST_F(NcclEngineGpus, WithoutNcclMemAllocBuffersComeFromCudaMalloc) {
  auto engine = two_gpus();
  ASSERT_NE(engine, nullptr);
  forget();
  ASSERT_TRUE(engine->allocate(1024, 1024).ok());
  int mallocs = 0;
  for (const Call& c : calls())
    mallocs += c.name == "cudaMalloc";
  EXPECT_EQ(mallocs, 4);
  EXPECT_EQ(buffer_note(api_, Registration::kNone),
            "buffers from cudaMalloc (this NCCL has no ncclMemAlloc)");
  fake::add_mem_alloc(api_);
  EXPECT_EQ(buffer_note(api_, Registration::kLocal),
            "buffers from ncclMemAlloc, registered with ncclCommRegister (-R 1)");
}

TEST_F(NcclEngineGpus, RegistrationFallsBackAsNcclTestsDoesOnAnOlderNccl) {
  // NCCL 2.28 with everything: -R 2 as asked.
  fake::add_registration(api_);
  fake::add_windows(api_);
  RegistrationPlan full = plan_registration(api_, Registration::kSymmetric, 22809);
  EXPECT_EQ(full.mode, Registration::kSymmetric);
  EXPECT_EQ(full.note, "");
  // NCCL 2.26: no windows, local registration with nccl-tests' line.
  Api older = fake::api();
  fake::add_registration(older);
  RegistrationPlan local = plan_registration(older, Registration::kSymmetric, 22603);
  EXPECT_EQ(local.mode, Registration::kLocal);
  EXPECT_EQ(local.note, "Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting "
                        "to local registration");
  // NCCL 2.18: no registration at all.
  Api oldest = fake::api();
  RegistrationPlan none = plan_registration(oldest, Registration::kLocal, 21803);
  EXPECT_EQ(none.mode, Registration::kNone);
  EXPECT_EQ(none.note, "Option -R (register) is not supported before NCCL 2.19. Ignoring");
  EXPECT_EQ(plan_registration(oldest, Registration::kNone, 21803).note, "");
}

TEST_F(NcclEngineGpus, AnAbortedEngineNeitherDeregistersNorDestroys) {
  fake::add_registration(api_);
  EngineConfig config;
  config.registration = Registration::kLocal;
  AbortRequest request;
  auto engine = two_gpus(config);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->allocate(1024, 1024).ok());
  engine->poll_aborts(&request);
  request.post(5, "watchdog");
  EXPECT_FALSE(engine->run_once(all_reduce_over(4)).ok());
  forget();
  engine.reset();
  for (const Call& c : calls())
    EXPECT_EQ(c.comm, -1) << c.name << " on an aborted communicator";
}

// -g 2 -t 2: two threads, each owning two communicators made in the process's group.
TEST_F(NcclEngineGpus, WithThreadsEachCommunicatorIsUsedAndAbortedByTheThreadThatOwnsIt) {
  AbortRequest request;
  std::vector<EngineMaker> makers;
  for (int t = 0; t < 2; ++t) {
    makers.push_back([this, t] {
      return make_nccl_engine(
          api_, {Member{fake_comm(2 * t), 2 * t}, Member{fake_comm(2 * t + 1), 2 * t + 1}});
    });
  }
  auto made = make_threaded_engine(std::move(makers));
  ASSERT_TRUE(made.ok()) << made.error().message();
  std::unique_ptr<Engine> engine = std::move(*made);
  EXPECT_EQ(engine->local_ranks(), 4);
  engine->poll_aborts(&request);
  std::thread watchdog([&] {
    while (fake_.async_queries.load() < 2)
      std::this_thread::yield();
    request.post(5, "watchdog: no progress");
  });
  Result<void> ran = engine->run_once(all_reduce_over(4));
  watchdog.join();
  ASSERT_FALSE(ran.ok());
  EXPECT_NE(ran.error().message().find("aborted (ncclCommAbort): watchdog: no progress"),
            std::string::npos)
      << ran.error().message();
  engine.reset();
  std::map<int, std::set<std::thread::id>> owners; // communicator -> threads that called it
  int aborts = 0;
  for (const Call& c : calls()) {
    if (c.comm < 0) continue;
    owners[c.comm].insert(c.thread);
    aborts += c.name == "ncclCommAbort";
    EXPECT_NE(c.thread, std::this_thread::get_id()) << c.name << " from the calling thread";
  }
  EXPECT_EQ(aborts, 4);
  ASSERT_EQ(owners.size(), 4u);
  for (const auto& [comm, threads] : owners)
    EXPECT_EQ(threads.size(), 1u) << "communicator " << comm << " used by several threads";
  EXPECT_EQ(*owners[0].begin(), *owners[1].begin()); // thread 0's two GPUs
  EXPECT_NE(*owners[0].begin(), *owners[2].begin());
}

} // namespace
} // namespace fabric::nccltest::nccl
