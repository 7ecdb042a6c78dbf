// The plugin's logic, driven directly: how an operation is counted when it starts and
// timed when its last kernel channel ends, whatever the order NCCL's threads call in; what
// happens when the pool is full or NCCL never completes an operation; and the file.
#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <mutex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "exporters/nccl_profiler/profiler.h"
#include "test_support.h"

namespace fabric::nccl_profiler {
namespace {

using testing::TempDir;

struct Logged {
  std::mutex mutex;
  std::vector<std::pair<bool, std::string>> lines;
  Profiler::LogFn fn() {
    return [this](bool warn, std::string_view message) {
      std::lock_guard lock(mutex);
      lines.emplace_back(warn, std::string(message));
    };
  }
  std::size_t warnings() {
    std::lock_guard lock(mutex);
    std::size_t n = 0;
    for (const auto& line : lines)
      n += line.first;
    return n;
  }
};

class ProfilerTest : public ::testing::Test {
protected:
  PluginConfig config() {
    PluginConfig c;
    c.dir = dir_.path();
    c.flush_interval = std::chrono::seconds(3600); // tests flush by hand unless they say
    c.pool_slots = 256;
    return c;
  }
  ProcessIdentity identity() { return own_process_identity(); }

  // A grouped launch's kernel, as NCCL reports it: each operation's one channel stamped
  // with the batch's start and end.
  static void run_batch(Profiler& p, const std::vector<void*>& ops, uint64_t start, uint64_t end) {
    std::vector<void*> channels;
    for (void* op : ops)
      channels.push_back(p.start_kernel_channel(op, start));
    for (void* ch : channels) {
      p.record_kernel_end(ch, end);
      p.stop(ch);
    }
  }

  static const ProfileCell* cell(const CommProfile& comm, Collective c, uint64_t size) {
    for (const auto& cell : comm.cells) {
      if (cell.collective == c && cell.size_bytes == size) return &cell;
    }
    return nullptr;
  }

  TempDir dir_;
  Logged log_;
};

constexpr CommIdentity kWorld{0x9f86d081884c7d65, 8, 3, 1};

TEST_F(ProfilerTest, CountedAtStartTimedWhenTheLastChannelEnds) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  ASSERT_NE(comm, nullptr);
  void* op = p.start_operation(comm, Collective::kAllReduce, "ncclFloat32", 1 << 20, 2);
  ASSERT_NE(op, nullptr);
  void* ch0 = p.start_kernel_channel(op, 1000);
  void* ch1 = p.start_kernel_channel(op, 1100);
  ASSERT_NE(ch0, nullptr);
  ASSERT_NE(ch1, nullptr);
  p.stop(op); // enqueued: NCCL stops the Coll event long before the GPU is done
  p.record_kernel_end(ch0, 5000);
  p.stop(ch0);

  auto mid = comm->snapshot();
  const ProfileCell* c = cell(mid, Collective::kAllReduce, 4 << 20);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ops, 1u);
  EXPECT_EQ(c->bytes, 4u << 20);
  EXPECT_EQ(c->timed_ops, 0u) << "one channel is still running";

  p.record_kernel_end(ch1, 6000);
  p.stop(ch1);
  auto done = comm->snapshot();
  c = cell(done, Collective::kAllReduce, 4 << 20);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->timed_ops, 1u);
  EXPECT_EQ(c->timed_bytes, 4u << 20);
  EXPECT_EQ(c->busy_ns, 5000u) << "first channel's start (1000) to last channel's end (6000)";
  EXPECT_EQ(c->last_busy_ns, 5000u);
}

TEST_F(ProfilerTest, ChannelsMayEndBeforeTheHostStops) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  void* op = p.start_operation(comm, Collective::kBroadcast, "ncclInt8", 100, 1);
  void* ch = p.start_kernel_channel(op, 10);
  p.record_kernel_end(ch, 110);
  p.stop(ch);
  EXPECT_EQ(cell(comm->snapshot(), Collective::kBroadcast, 64)->timed_ops, 0u);
  p.stop(op);
  auto after = comm->snapshot();
  const ProfileCell* c = cell(after, Collective::kBroadcast, 64);
  EXPECT_EQ(c->timed_ops, 1u);
  EXPECT_EQ(c->busy_ns, 100u);
}

TEST_F(ProfilerTest, WithoutGpuTimestampsTheProxyThreadsClockIsUsed) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  auto before = std::chrono::steady_clock::now();
  void* op = p.start_operation(comm, Collective::kReduceScatter, "ncclBfloat16", 4096, 1);
  void* ch = p.start_kernel_channel(op, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2)); // a measurable span, not a wait
  p.record_kernel_end(ch, 0);
  p.stop(ch);
  p.stop(op);
  auto wall = std::chrono::steady_clock::now() - before;
  auto after = comm->snapshot();
  const ProfileCell* c = cell(after, Collective::kReduceScatter, 64 << 10);
  ASSERT_NE(c, nullptr) << "4096 x 2 bytes x 8 ranks";
  EXPECT_EQ(c->timed_ops, 1u);
  EXPECT_GE(c->busy_ns, 2000000u);
  EXPECT_LE(c->busy_ns, static_cast<uint64_t>(std::chrono::nanoseconds(wall).count()));
}

TEST_F(ProfilerTest, WithoutChannelsAnOperationIsCountedNotTimed) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  void* op = p.start_operation(comm, Collective::kSend, "ncclFloat64", 16, 0);
  ASSERT_NE(op, nullptr);
  p.stop(op);
  auto after = comm->snapshot();
  const ProfileCell* c = cell(after, Collective::kSend, 128);
  EXPECT_EQ(c->ops, 1u);
  EXPECT_EQ(c->timed_ops, 0u);
  // The slot is free again: 256 more operations fit in a 256-slot pool.
  for (int i = 0; i < 256; ++i)
    EXPECT_NE(p.start_operation(comm, Collective::kSend, "ncclInt8", 1, 5), nullptr);
}

TEST_F(ProfilerTest, StrayHandlesAreIgnored) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  int not_ours = 0;
  p.stop(nullptr);
  p.stop(&not_ours);
  p.record_kernel_end(&not_ours, 5);
  EXPECT_EQ(p.start_kernel_channel(nullptr, 1), nullptr);
  EXPECT_EQ(p.start_kernel_channel(&not_ours, 1), nullptr);
  void* op = p.start_operation(comm, Collective::kAllGather, "ncclFloat16", 512, 1);
  EXPECT_EQ(p.start_kernel_channel(static_cast<char*>(op) + 8, 1), nullptr) << "inside a slot";
  // A channel more than the descriptor announced does not complete the operation early,
  // nor twice.
  void* ch0 = p.start_kernel_channel(op, 100);
  void* ch1 = p.start_kernel_channel(op, 100);
  p.record_kernel_end(ch0, 200);
  p.stop(ch0);
  p.stop(ch1);
  EXPECT_EQ(cell(comm->snapshot(), Collective::kAllGather, 8192)->timed_ops, 0u);
  p.stop(op);
  p.stop(op); // NCCL never stops twice; if it did, nothing more is counted
  auto after = comm->snapshot();
  const ProfileCell* c = cell(after, Collective::kAllGather, 8192);
  EXPECT_EQ(c->ops, 1u);
  EXPECT_EQ(c->timed_ops, 1u);
  // Work on a completed operation's channel handle goes nowhere.
  EXPECT_EQ(p.start_kernel_channel(op, 1), nullptr);
}

TEST_F(ProfilerTest, AFullPoolDropsTimingButKeepsCounting) {
  PluginConfig c = config();
  c.pool_slots = 64;
  Profiler p(c, identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  for (int i = 0; i < 64; ++i)
    ASSERT_NE(p.start_operation(comm, Collective::kAllReduce, "ncclFloat32", 1, 1), nullptr);
  EXPECT_EQ(p.start_operation(comm, Collective::kAllReduce, "ncclFloat32", 1, 1), nullptr);
  EXPECT_EQ(p.events_dropped(), 1u);
  EXPECT_EQ(cell(comm->snapshot(), Collective::kAllReduce, 4)->ops, 65u);
}

TEST_F(ProfilerTest, OperationsNcclNeverCompletesAreAbandoned) {
  PluginConfig c = config();
  c.pool_slots = 64;
  c.abandon_after_flushes = 2;
  Profiler p(c, identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  std::vector<void*> ops;
  for (int i = 0; i < 64; ++i)
    ops.push_back(p.start_operation(comm, Collective::kReduce, "ncclInt32", 8, 4));
  for (void* op : ops)
    p.stop(op); // their four channels never come
  p.flush();
  EXPECT_EQ(p.start_operation(comm, Collective::kReduce, "ncclInt32", 8, 4), nullptr)
      << "still waiting";
  p.flush();
  ProcessProfile after = p.snapshot();
  EXPECT_EQ(after.events_abandoned, 64u);
  EXPECT_NE(p.start_operation(comm, Collective::kReduce, "ncclInt32", 8, 4), nullptr) << "freed";
  EXPECT_EQ(cell(after.comms[0], Collective::kReduce, 32)->timed_ops, 0u);
}

// A grouped launch, as NCCL's kernel reports it: every work item of the batch gets the
// batch's start and end. The cell's busy time is the GPU's time, counted once: four
// sends in 4 us moved four messages in 4 us, not in 16. Overlapping operations likewise.
TEST_F(ProfilerTest, ABatchCountsItsCommonTimeOnce) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  auto run = [&](uint64_t start, uint64_t end) {
    void* op = p.start_operation(comm, Collective::kSend, "ncclInt8", 1 << 20, 1);
    void* ch = p.start_kernel_channel(op, start);
    p.stop(op);
    p.record_kernel_end(ch, end);
    p.stop(ch);
  };
  for (int i = 0; i < 4; ++i)
    run(1000, 5000);
  auto batch = comm->snapshot();
  const ProfileCell* c = cell(batch, Collective::kSend, 1 << 20);
  EXPECT_EQ(c->timed_ops, 4u);
  EXPECT_EQ(c->timed_bytes, 4u << 20);
  EXPECT_EQ(c->busy_ns, 4000u) << "the batch's 4 us, once";
  EXPECT_EQ(c->last_busy_ns, 4000u);
  // Two that overlap by 1 us: 3 us of GPU time.
  run(6000, 8000);
  run(7000, 9000);
  auto overlapping = comm->snapshot();
  c = cell(overlapping, Collective::kSend, 1 << 20);
  EXPECT_EQ(c->busy_ns, 7000u);
  EXPECT_EQ(c->last_busy_ns, 3000u);
  EXPECT_EQ(c->last_timed_bytes, 2u << 20);
}

// A pipeline stage's grouped send and receive, and two gradient buckets of different sizes
// in one group, as NCCL reports them: one Coll or P2p start per item while the group is
// enqueued, then each item's kernel channel with the batch's start, and its end. Each
// cell (series) gets the group's time once, so its bandwidth is its own bytes over the
// time it held the GPU; the cells' times are not a communicator's time, which would be
// the group's 4 us once.
TEST_F(ProfilerTest, AGroupAcrossCellsGivesEachCellTheGroupsTime) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  struct Item {
    Collective collective;
    const char* datatype;
    uint64_t count;
  };
  auto run_group = [&](const std::vector<Item>& items, uint64_t start, uint64_t end) {
    std::vector<void*> ops;
    for (const Item& item : items)
      ops.push_back(p.start_operation(comm, item.collective, item.datatype, item.count, 1));
    for (void* op : ops)
      p.stop(op);
    run_batch(p, ops, start, end);
  };
  run_group(
      {{Collective::kSend, "ncclBfloat16", 1 << 19}, {Collective::kRecv, "ncclBfloat16", 1 << 19}},
      10000, 14000);
  run_group({{Collective::kAllReduce, "ncclFloat32", 1 << 18},
             {Collective::kAllReduce, "ncclFloat32", 1 << 20}},
            20000, 24000);
  auto profile = comm->snapshot();
  for (auto [collective, size] : {std::pair{Collective::kSend, uint64_t{1} << 20},
                                  std::pair{Collective::kRecv, uint64_t{1} << 20},
                                  std::pair{Collective::kAllReduce, uint64_t{1} << 20},
                                  std::pair{Collective::kAllReduce, uint64_t{4} << 20}}) {
    const ProfileCell* c = cell(profile, collective, size);
    ASSERT_NE(c, nullptr) << collective_name(collective) << " " << size;
    EXPECT_EQ(c->timed_ops, 1u);
    EXPECT_EQ(c->timed_bytes, size);
    EXPECT_EQ(c->busy_ns, 4000u) << collective_name(collective) << " " << size;
  }
}

// A communicator's own time, recorded as NCCL reports a training step: a grouped
// all-reduce of two gradient buckets and an all-gather in one launch (every item stamped
// with the batch's 10-14 us), then an all-reduce and an all-gather that overlap by 1 us
// (15-18 and 17-19), then, after an idle gap, one all-gather alone (30-32). The
// communicator was busy 4 + 4 + 2 = 10 us, whatever its cells add up to (19 us).
TEST_F(ProfilerTest, ACommunicatorCountsOverlapAcrossCollectivesOnce) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  auto launch = [&](Collective collective, uint64_t count) {
    void* op = p.start_operation(comm, collective, "ncclFloat32", count, 1);
    p.stop(op);
    return op;
  };
  auto run = [&](const std::vector<void*>& ops, uint64_t start, uint64_t end) {
    run_batch(p, ops, start, end);
  };
  // Per rank: 256 KiB and 1 MiB all-reduce buckets, a 64 KiB x 8 ranks all-gather.
  run({launch(Collective::kAllReduce, 1 << 16), launch(Collective::kAllReduce, 1 << 18),
       launch(Collective::kAllGather, 1 << 14)},
      10000, 14000);
  auto step = comm->snapshot();
  ASSERT_TRUE(step.busy.has_value());
  EXPECT_EQ(step.busy->busy_ns, 4000u) << "one group, once";
  EXPECT_EQ(step.busy->timed_bytes, (256u << 10) + (1u << 20) + (512u << 10));

  run({launch(Collective::kAllReduce, 1 << 18)}, 15000, 18000);
  run({launch(Collective::kAllGather, 1 << 14)}, 17000, 19000);
  run({launch(Collective::kAllGather, 1 << 14)}, 30000, 32000);
  auto profile = comm->snapshot();
  ASSERT_TRUE(profile.busy.has_value());
  EXPECT_EQ(profile.busy->busy_ns, 10000u);
  EXPECT_EQ(profile.busy->last_busy_ns, 6000u) << "since the first snapshot";
  uint64_t cells_busy = 0, cells_bytes = 0;
  for (const auto& cell : profile.cells) {
    cells_busy += cell.busy_ns;
    cells_bytes += cell.timed_bytes;
  }
  EXPECT_EQ(cells_busy, 4000u + (4000u + 3000u) + (4000u + 2000u + 2000u)) << "per cell";
  EXPECT_EQ(profile.busy->timed_bytes, cells_bytes) << "the same operations";
  EXPECT_EQ(profile.busy->last_timed_bytes, (1u << 20) + 2 * (512u << 10));

  // The file carries it on the communicator's line.
  p.flush();
  auto read = parse_profile(testing::read_text(p.file_path()), "file");
  ASSERT_TRUE(read.ok()) << read.error().message();
  ASSERT_EQ(read->comms.size(), 1u);
  ASSERT_TRUE(read->comms[0].busy.has_value());
  EXPECT_EQ(read->comms[0].busy->busy_ns, 10000u);
}

// The proxy thread's clock and the GPU's are never compared: an operation timed on the
// host does not hide GPU time of the same communicator, or the other way round.
TEST_F(ProfilerTest, ACommunicatorsTwoClocksAreCountedApart) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  comm->add_timed(Collective::kAllReduce, size_bucket(64), 64, {5000000, 5001000, true});
  comm->add_timed(Collective::kBroadcast, size_bucket(64), 64, {1000, 3000, false});
  comm->add_timed(Collective::kAllGather, size_bucket(64), 64, {2000, 4000, false});
  auto profile = comm->snapshot();
  ASSERT_TRUE(profile.busy.has_value());
  EXPECT_EQ(profile.busy->busy_ns, 1000u + 3000u);
}

// A receive behind a checkpoint: its operation is abandoned, its slot serves the next
// operation, and then the old operation's kernel channel reports in. It must not touch
// the new operation's time or references.
TEST_F(ProfilerTest, LateEventsOfAnAbandonedOperationChangeNothing) {
  PluginConfig c = config();
  c.pool_slots = 64;
  c.abandon_after_flushes = 1;
  Profiler p(c, identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  std::vector<void*> old_ops, old_channels;
  for (int i = 0; i < 64; ++i) {
    void* op = p.start_operation(comm, Collective::kRecv, "ncclInt8", 1 << 20, 2);
    ASSERT_NE(op, nullptr);
    old_channels.push_back(p.start_kernel_channel(op, 10));
    p.stop(op);
    old_ops.push_back(op);
  }
  p.flush();
  ASSERT_EQ(p.snapshot().events_abandoned, 64u);
  // Every slot now serves a new operation of one channel, 1000 ns long.
  std::vector<void*> ops;
  for (int i = 0; i < 64; ++i) {
    void* op = p.start_operation(comm, Collective::kSend, "ncclInt8", 1 << 20, 1);
    ASSERT_NE(op, nullptr);
    ops.push_back(op);
  }
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(p.start_kernel_channel(old_ops[i], 5), nullptr);
    p.record_kernel_end(old_channels[i], 999999);
    p.stop(old_channels[i]);
    p.stop(old_ops[i]);
  }
  EXPECT_EQ(cell(comm->snapshot(), Collective::kSend, 1 << 20)->timed_ops, 0u)
      << "a stale stop released a new operation's reference";
  uint64_t at = 1000;
  for (void* op : ops) {
    void* ch = p.start_kernel_channel(op, at);
    ASSERT_NE(ch, nullptr);
    p.stop(op);
    p.record_kernel_end(ch, at + 1000);
    p.stop(ch);
    at += 2000;
  }
  auto after = comm->snapshot();
  const ProfileCell* sends = cell(after, Collective::kSend, 1 << 20);
  EXPECT_EQ(sends->timed_ops, 64u);
  EXPECT_EQ(sends->busy_ns, 64u * 1000) << "a stale channel stretched a new operation";
  EXPECT_EQ(cell(after, Collective::kRecv, 1 << 20)->timed_ops, 0u);
}

// CollNet and SHARP run a collective on channels the descriptor's nChannels does not
// count: the operation is timed to the end of its last channel, once.
TEST_F(ProfilerTest, ChannelsBeyondTheAnnouncedOnesExtendTheOperation) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  void* op = p.start_operation(comm, Collective::kAllReduce, "ncclFloat32", 1 << 18, 1);
  void* ch0 = p.start_kernel_channel(op, 1000);
  void* ch1 = p.start_kernel_channel(op, 1100);
  void* ch2 = p.start_kernel_channel(op, 1200);
  ASSERT_NE(ch1, nullptr);
  ASSERT_NE(ch2, nullptr);
  p.stop(op);
  p.record_kernel_end(ch0, 2000);
  p.stop(ch0);
  p.record_kernel_end(ch1, 3000);
  p.stop(ch1);
  EXPECT_EQ(cell(comm->snapshot(), Collective::kAllReduce, 1 << 20)->timed_ops, 0u)
      << "completed before its last channel";
  p.record_kernel_end(ch2, 5000);
  p.stop(ch2);
  p.stop(ch2); // NCCL never stops twice; if it did, nothing more is counted
  auto after = comm->snapshot();
  const ProfileCell* c = cell(after, Collective::kAllReduce, 1 << 20);
  EXPECT_EQ(c->timed_ops, 1u);
  EXPECT_EQ(c->busy_ns, 4000u);
}

TEST_F(ProfilerTest, FlushWritesTheWholeFileAtomically) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  for (uint64_t i = 0; i < 3; ++i) {
    void* op = p.start_operation(comm, Collective::kAllReduce, "ncclFloat32", 256, 1);
    void* ch = p.start_kernel_channel(op, 1000 + 2000 * i);
    p.record_kernel_end(ch, 2000 + 2000 * i);
    p.stop(ch);
    p.stop(op);
  }
  p.flush();
  std::string path = p.file_path();
  EXPECT_EQ(path,
            dir_.file(profile_file_name(::getpid(), identity().pid_ns, identity().start_ticks)));
  auto first = parse_profile(testing::read_text(path), path);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first->sequence, 1u);
  EXPECT_EQ(first->pid, ::getpid());
  EXPECT_EQ(first->interval_ms, 3600000);
  ASSERT_EQ(first->comms.size(), 1u);
  EXPECT_EQ(first->comms[0].hash, kWorld.hash);
  const ProfileCell* c = cell(first->comms[0], Collective::kAllReduce, 1024);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ops, 3u);
  EXPECT_EQ(c->busy_ns, 3000u);
  EXPECT_EQ(c->last_busy_ns, 3000u);

  p.flush();
  auto second = parse_profile(testing::read_text(path), path);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->sequence, 2u);
  c = cell(second->comms[0], Collective::kAllReduce, 1024);
  EXPECT_EQ(c->busy_ns, 3000u) << "cumulative";
  EXPECT_EQ(c->last_busy_ns, 0u) << "nothing ran since the last write";
  // Only the file: the temporary it was written through is gone.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_.path()))
    ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST_F(ProfilerTest, AnUnwritableDirectoryIsLoggedOnceAndNeverFails) {
  PluginConfig c = config();
  c.dir = dir_.file("not-mounted");
  Profiler p(c, identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  p.start_operation(comm, Collective::kAllReduce, "ncclFloat32", 1, 0);
  for (int i = 0; i < 3; ++i)
    p.flush();
  ASSERT_EQ(log_.warnings(), 1u);
  EXPECT_NE(log_.lines[0].second.find(c.dir), std::string::npos) << log_.lines[0].second;
  EXPECT_NE(log_.lines[0].second.find("No such file or directory"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(c.dir)) << "the plugin does not create it";
  // The counting goes on; a directory that appears later gets the file, silently.
  std::filesystem::create_directory(c.dir);
  p.flush();
  EXPECT_TRUE(std::filesystem::exists(p.file_path()));
  EXPECT_EQ(log_.warnings(), 1u);
}

TEST_F(ProfilerTest, TheFlusherWritesEveryInterval) {
  PluginConfig c = config();
  c.flush_interval = std::chrono::seconds(1);
  Profiler p(c, identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld);
  p.start_operation(comm, Collective::kAllReduce, "ncclFloat32", 1, 0);
  // Wait, bounded, until the flusher has written twice.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  uint64_t sequence = 0;
  while (sequence < 2 && std::chrono::steady_clock::now() < deadline) {
    auto parsed = parse_profile(testing::read_text(p.file_path()), "flushed");
    if (parsed.ok()) sequence = parsed->sequence;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(sequence, 2u);
}

TEST_F(ProfilerTest, TheLastFinalizeWritesAndKeepsFinalizedCounters) {
  Profiler p(config(), identity(), log_.fn());
  CommStats* a = p.add_comm(kWorld);
  CommStats* b = p.add_comm({0x1111222233334444, 2, 0, 2});
  p.start_operation(a, Collective::kAllReduce, "ncclFloat32", 1, 0);
  p.start_operation(b, Collective::kRecv, "ncclFloat32", 1, 0);
  p.finalize_comm(a);
  EXPECT_FALSE(std::filesystem::exists(p.file_path())) << "another communicator still runs";
  p.finalize_comm(b);
  auto parsed = parse_profile(testing::read_text(p.file_path()), "final");
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->comms.size(), 2u) << "a finalized communicator's counters stay";
  // A new communicator after that restarts the counting where it was.
  CommStats* c = p.add_comm({0x5555666677778888, 4, 1, 1});
  ASSERT_NE(c, nullptr);
  p.finalize_comm(c);
  parsed = parse_profile(testing::read_text(p.file_path()), "final");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->comms.size(), 3u);
  EXPECT_EQ(parsed->sequence, 2u);
}

// ncclCommInitAll, or one process per host as JAX runs: every rank of the process has the
// communicator's hash; the file keeps each rank's counters and still reads back.
TEST_F(ProfilerTest, SeveralRanksOfOneCommunicatorInOneProcess) {
  Profiler p(config(), identity(), log_.fn());
  for (int rank = 0; rank < 4; ++rank) {
    CommStats* comm = p.add_comm({kWorld.hash, 8, rank, 1});
    ASSERT_NE(comm, nullptr);
    for (int i = 0; i <= rank; ++i)
      p.start_operation(comm, Collective::kAllReduce, "ncclFloat32", 256, 0);
  }
  p.flush();
  auto parsed = parse_profile(testing::read_text(p.file_path()), "four ranks");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  ASSERT_EQ(parsed->comms.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(parsed->comms[rank].hash, kWorld.hash);
    EXPECT_EQ(parsed->comms[rank].rank, rank);
    EXPECT_EQ(cell(parsed->comms[rank], Collective::kAllReduce, 1024)->ops,
              static_cast<uint64_t>(rank + 1));
  }
}

TEST_F(ProfilerTest, CommunicatorsBeyondTheCapReplaceFinalizedOnes) {
  PluginConfig c = config();
  c.max_comms = 2;
  Profiler p(c, identity(), log_.fn());
  CommStats* a = p.add_comm({1, 2, 0, 1});
  CommStats* b = p.add_comm({2, 2, 0, 1});
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(p.add_comm({3, 2, 0, 1}), nullptr);
  EXPECT_EQ(log_.warnings(), 1u);
  // An operation still in flight keeps a finalized communicator's counters alive.
  void* op = p.start_operation(a, Collective::kAllReduce, "ncclFloat32", 1, 1);
  p.finalize_comm(a);
  EXPECT_EQ(p.add_comm({3, 2, 0, 1}), nullptr);
  p.stop(op);
  void* ch = p.start_kernel_channel(op, 1);
  p.record_kernel_end(ch, 2);
  p.stop(ch);
  CommStats* third = p.add_comm({3, 2, 0, 1});
  ASSERT_NE(third, nullptr);
  auto profile = p.snapshot();
  ASSERT_EQ(profile.comms.size(), 2u);
  EXPECT_EQ(profile.comms[0].hash, 2u);
  EXPECT_EQ(profile.comms[1].hash, 3u);
}

// NCCL's threads as they are: per communicator, a launching thread that starts and stops
// the operations, and a proxy thread that reports their kernel channels, concurrently.
TEST_F(ProfilerTest, ManyThreadsCountExactly) {
  PluginConfig c = config();
  c.pool_slots = 4096;
  c.abandon_after_flushes = 1000; // the flushes below come far faster than every 10 s
  Profiler p(c, identity(), log_.fn());
  constexpr int kComms = 3, kOps = 10000, kChannels = 2;
  std::vector<std::thread> threads;
  std::vector<CommStats*> comms;
  for (int i = 0; i < kComms; ++i)
    comms.push_back(p.add_comm({uint64_t(100 + i), 8, i, 1}));
  struct Queue {
    std::mutex mutex;
    std::deque<std::pair<void*, int>> ops;
    bool done = false;
  };
  std::vector<Queue> queues(kComms);
  for (int i = 0; i < kComms; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kOps; ++n) {
        // NCCL bounds the operations in flight too; without a bound a launching thread
        // that runs ahead would only measure the pool's size.
        for (;;) {
          std::lock_guard lock(queues[i].mutex);
          if (queues[i].ops.size() < 512) break;
        }
        void* op = p.start_operation(comms[i], n % 2 ? Collective::kAllReduce : Collective::kSend,
                                     "ncclFloat32", 1 + n % 4096, kChannels);
        {
          std::lock_guard lock(queues[i].mutex);
          queues[i].ops.emplace_back(op, n);
        }
        p.stop(op);
      }
      std::lock_guard lock(queues[i].mutex);
      queues[i].done = true;
    });
    threads.emplace_back([&, i] {
      for (;;) {
        void* op = nullptr;
        uint64_t n = 0;
        {
          std::lock_guard lock(queues[i].mutex);
          if (queues[i].ops.empty()) {
            if (queues[i].done) return;
          } else {
            op = queues[i].ops.front().first;
            n = static_cast<uint64_t>(queues[i].ops.front().second);
            queues[i].ops.pop_front();
          }
        }
        if (op == nullptr) {
          std::this_thread::yield();
          continue;
        }
        // The GPU runs a communicator's operations one after the other: 10 ns each.
        void* ch[kChannels];
        for (auto& h : ch)
          h = p.start_kernel_channel(op, 1000 + 20 * n);
        for (auto& h : ch) {
          p.record_kernel_end(h, 1010 + 20 * n);
          p.stop(h);
        }
      }
    });
  }
  // The flusher reads while they run.
  threads.emplace_back([&] {
    for (int i = 0; i < 20; ++i)
      p.flush();
  });
  for (auto& t : threads)
    t.join();
  ProcessProfile profile = p.snapshot();
  ASSERT_EQ(profile.comms.size(), std::size_t{kComms});
  uint64_t all_timed = 0;
  for (const auto& comm : profile.comms) {
    uint64_t ops = 0, timed = 0, busy = 0;
    for (const auto& cell : comm.cells) {
      ops += cell.ops;
      timed += cell.timed_ops;
      busy += cell.busy_ns;
    }
    EXPECT_EQ(ops, uint64_t{kOps});
    EXPECT_EQ(busy, timed * 10) << "each timed operation took 10 ns";
    all_timed += timed;
  }
  // Every operation is timed exactly once, unless the pool had no slot for it.
  EXPECT_EQ(all_timed + profile.events_dropped, uint64_t{kComms} * kOps);
  EXPECT_EQ(profile.events_abandoned, 0u);
}

// The sequence of the process's file as a reader sees it; 0 while there is none.
uint64_t written_sequence(const Profiler& p) {
  auto parsed = parse_profile(testing::read_text(p.file_path()), "sequence");
  return parsed.ok() ? parsed->sequence : 0;
}

// Threads create and finalize communicators at once, the process's last one among them,
// round after round. After each round, the communicators left alive must still see their
// file rewritten by the flusher: a file that stops changing is what the reader takes for
// an exited job. A creation that counted itself between the last finalize's count and its
// stop of the flusher found the old flusher still running, and was then left without one.
//
// NCCL's logger writes under a lock, to stderr or a file, and can be slow; this one takes
// a millisecond for the plugin's notes. The last finalize logs between its count and its
// stop of the flusher, so a slow logger holds it there, with the creators running: the
// interleaving that lost the flusher happens in most rounds unless the two are serialized.
TEST_F(ProfilerTest, LiveCommunicatorsKeepTheirFileRewrittenWhileOthersComeAndGo) {
  PluginConfig c = config();
  c.flush_interval = std::chrono::milliseconds(1);
  auto slow_log = [](bool warn, std::string_view) {
    if (!warn) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  Profiler p(c, identity(), slow_log);
  // Bounded in rounds and in time: a loaded machine runs fewer rounds.
  constexpr int kCreators = 3, kRounds = 200;
  const auto stop_opening = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::atomic<int> round{-1};
  std::atomic<bool> closed{false};
  std::atomic<int> finished{0};
  CommStats* last = p.add_comm({1, 2, 0, 1});
  ASSERT_NE(last, nullptr);
  std::vector<CommStats*> created(kCreators);
  // Every thread starts a round as soon as it is opened, so that the finalize and the
  // creations overlap; yielding rather than blocking keeps them from starting a wake-up
  // apart.
  auto await_round = [&](int r) {
    while (round.load() < r && !closed.load())
      std::this_thread::yield();
    return !closed.load();
  };
  std::vector<std::jthread> threads;
  struct CloseRounds {
    std::atomic<bool>& closed;
    ~CloseRounds() { closed.store(true); } // before the threads are joined, on any exit
  } close_rounds{closed};
  threads.emplace_back([&] {
    for (int r = 0; r < kRounds && await_round(r); ++r) {
      p.finalize_comm(last);
      finished.fetch_add(1);
    }
  });
  for (int i = 0; i < kCreators; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < kRounds && await_round(r); ++r) {
        created[i] = p.add_comm({static_cast<uint64_t>(2 + r * kCreators + i), 2, 0, 1});
        finished.fetch_add(1);
      }
    });
  }
  int r = 0;
  for (; r < kRounds && std::chrono::steady_clock::now() < stop_opening; ++r) {
    finished.store(0);
    round.store(r);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (finished.load() < 1 + kCreators && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    ASSERT_EQ(finished.load(), 1 + kCreators) << "round " << r << " did not finish";
    for (CommStats* comm : created)
      ASSERT_NE(comm, nullptr);
    // Polled, since nothing else says when a file was written; bounded for the failure.
    uint64_t before = written_sequence(p);
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (written_sequence(p) <= before && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_GT(written_sequence(p), before)
        << "round " << r << ": communicators are alive and their file is no longer written";
    // One of this round's communicators is the next round's last one.
    for (int i = 1; i < kCreators; ++i)
      p.finalize_comm(created[i]);
    last = created[0];
  }
  RecordProperty("rounds", r);
}

TEST_F(ProfilerTest, AForkedChildNeverWritesItsParentsFile) {
  PluginConfig c = config();
  Profiler p(c, identity(), log_.fn());
  CommStats* comm = p.add_comm(kWorld); // the flusher thread runs (but not in the child)
  p.start_operation(comm, Collective::kAllReduce, "ncclFloat32", 1, 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    p.flush();
    p.shutdown();
    ::_exit(std::filesystem::exists(p.file_path()) ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child wrote the parent's file";
  p.shutdown();
  EXPECT_TRUE(std::filesystem::exists(p.file_path()));
}

} // namespace
} // namespace fabric::nccl_profiler
