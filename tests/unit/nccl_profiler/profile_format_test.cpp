// The file between the plugin and the exporter: what the plugin writes reads back the
// same, and anything else in the shared directory is refused with a reason.
#include <gtest/gtest.h>

#include "exporters/nccl_profiler/profile_format.h"

namespace fabric::nccl_profiler {
namespace {

ProcessProfile sample() {
  ProcessProfile p;
  p.pid = 4242;
  p.pid_ns = 4026532198;
  p.start_ticks = 3157;
  p.written_unix_ms = 1732000000123;
  p.interval_ms = 10000;
  p.sequence = 17;
  p.abi = "ncclProfiler_v5";
  p.events_dropped = 2;
  p.events_abandoned = 1;
  CommProfile world{0x9f86d081884c7d65, 16, 3, 2, {}, {}};
  world.cells.push_back({Collective::kAllReduce, 1 << 20, 1200, 1258291200, 1199, 1257242624,
                         913000000, 104857600, 7700000});
  world.cells.push_back({Collective::kAllGather, 0, 4, 0, 4, 0, 1000, 0, 0});
  // The two cells overlapped for 1000 ns: the communicator was busy that much less.
  world.busy = CommBusy{1257242624, 912000000, 104857600, 7700000};
  // As a plugin that does not write the communicator's own time: no such keys.
  CommProfile pair{0x0123456789abcdef, 2, 0, 1, {}, {}};
  pair.cells.push_back({Collective::kSend, 8, 10, 80, 10, 80, 5000, 8, 500});
  p.comms = {world, pair};
  return p;
}

void expect_same(const ProcessProfile& a, const ProcessProfile& b) {
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.pid_ns, b.pid_ns);
  EXPECT_EQ(a.start_ticks, b.start_ticks);
  EXPECT_EQ(a.written_unix_ms, b.written_unix_ms);
  EXPECT_EQ(a.interval_ms, b.interval_ms);
  EXPECT_EQ(a.sequence, b.sequence);
  EXPECT_EQ(a.abi, b.abi);
  EXPECT_EQ(a.events_dropped, b.events_dropped);
  EXPECT_EQ(a.events_abandoned, b.events_abandoned);
  ASSERT_EQ(a.comms.size(), b.comms.size());
  for (std::size_t i = 0; i < a.comms.size(); ++i) {
    EXPECT_EQ(a.comms[i].hash, b.comms[i].hash);
    EXPECT_EQ(a.comms[i].nranks, b.comms[i].nranks);
    EXPECT_EQ(a.comms[i].rank, b.comms[i].rank);
    EXPECT_EQ(a.comms[i].nnodes, b.comms[i].nnodes);
    ASSERT_EQ(a.comms[i].busy.has_value(), b.comms[i].busy.has_value());
    if (a.comms[i].busy) {
      EXPECT_EQ(a.comms[i].busy->timed_bytes, b.comms[i].busy->timed_bytes);
      EXPECT_EQ(a.comms[i].busy->busy_ns, b.comms[i].busy->busy_ns);
      EXPECT_EQ(a.comms[i].busy->last_timed_bytes, b.comms[i].busy->last_timed_bytes);
      EXPECT_EQ(a.comms[i].busy->last_busy_ns, b.comms[i].busy->last_busy_ns);
    }
    ASSERT_EQ(a.comms[i].cells.size(), b.comms[i].cells.size());
    for (std::size_t j = 0; j < a.comms[i].cells.size(); ++j) {
      const auto& x = a.comms[i].cells[j];
      const auto& y = b.comms[i].cells[j];
      EXPECT_EQ(x.collective, y.collective);
      EXPECT_EQ(x.size_bytes, y.size_bytes);
      EXPECT_EQ(x.ops, y.ops);
      EXPECT_EQ(x.bytes, y.bytes);
      EXPECT_EQ(x.timed_ops, y.timed_ops);
      EXPECT_EQ(x.timed_bytes, y.timed_bytes);
      EXPECT_EQ(x.busy_ns, y.busy_ns);
      EXPECT_EQ(x.last_timed_bytes, y.last_timed_bytes);
      EXPECT_EQ(x.last_busy_ns, y.last_busy_ns);
    }
  }
}

TEST(ProfileFormat, RoundTrips) {
  std::string text = render_profile(sample());
  auto parsed = parse_profile(text, "sample");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  expect_same(*parsed, sample());
}

// One process driving several GPUs (ncclCommInitAll, JAX's one process per host,
// nccl-tests -g 8) holds several ranks of the same communicator: each is its own record.
TEST(ProfileFormat, SeveralRanksOfOneCommunicatorInOneProcess) {
  ProcessProfile p = sample();
  CommProfile second_rank = p.comms[0];
  second_rank.rank = 4;
  p.comms.push_back(second_rank);
  auto parsed = parse_profile(render_profile(p), "two-ranks");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  expect_same(*parsed, p);
}

TEST(ProfileFormat, ReadsLikeTheReadme) {
  std::string text = render_profile(sample());
  EXPECT_TRUE(text.starts_with("fabric-nccl-profile 1\npid 4242\npid_ns 4026532198\n")) << text;
  EXPECT_NE(text.find("\ncomm 9f86d081884c7d65 nranks 16 rank 3 nnodes 2 timed_bytes 1257242624 "
                      "busy_ns 912000000 last_timed_bytes 104857600 last_busy_ns 7700000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\ncomm 0123456789abcdef nranks 2 rank 0 nnodes 1\n"), std::string::npos);
  // The last interval: 104857600 bytes in 7.7 ms is 13.62 GB/s, times 2*15/16 for busbw.
  EXPECT_NE(text.find("cell all_reduce 1048576 ops 1200 bytes 1258291200 timed_ops 1199 "
                      "timed_bytes 1257242624 busy_ns 913000000 last_timed_bytes 104857600 "
                      "last_busy_ns 7700000 algbw_gbps 13.62 busbw_gbps 25.53\n"),
            std::string::npos)
      << text;
  // No time in the last interval: no bandwidth printed.
  EXPECT_NE(text.find("cell all_gather 0 ops 4 bytes 0 timed_ops 4 timed_bytes 0 busy_ns 1000 "
                      "last_timed_bytes 0 last_busy_ns 0\n"),
            std::string::npos);
  EXPECT_TRUE(text.ends_with("\nend\n"));
}

// The communicator's own counters came within version 1: a file of a plugin that does not
// write them is whole, and says nothing of the communicator's time (not that it was 0).
TEST(ProfileFormat, ACommunicatorWithoutItsOwnTimeIsWhole) {
  std::string text = render_profile(sample());
  text = text.substr(0, text.find(" timed_bytes 1257242624 busy_ns 912000000")) +
         text.substr(text.find("\n", text.find("\ncomm 9f86d081884c7d65") + 1));
  auto parsed = parse_profile(text, "older");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message() << "\n" << text;
  ASSERT_EQ(parsed->comms.size(), 2u);
  EXPECT_FALSE(parsed->comms[0].busy.has_value());
  EXPECT_EQ(parsed->comms[0].cells.size(), 2u);
  EXPECT_FALSE(parsed->comms[1].busy.has_value());
}

TEST(ProfileFormat, FileNameNamesTheProcess) {
  EXPECT_EQ(profile_file_name(4242, 4026532198, 3157), "nccl-4026532198-4242-3157.prof");
}

TEST(ProfileFormat, UnknownKeysAreIgnored) {
  std::string text = render_profile(sample());
  text.insert(text.find("abi "), "hostname node-7\n");
  text.insert(text.find(" nnodes 2"), " color blue");
  auto parsed = parse_profile(text, "sample");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  expect_same(*parsed, sample());
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ProfileFormat, RefusesWhatIsNotAProfile) {
  const std::string good = render_profile(sample());
  struct Case {
    std::string name;
    std::string text;
    std::string reason;
  };
  std::vector<Case> cases = {
      {"empty", "", "empty file"},
      {"other file", "[global]\nfoo = bar\n", "not a fabric NCCL profile"},
      {"cut short", good.substr(0, good.size() - 2), "no newline"},
      {"no end", good.substr(0, good.size() - 4), "no end line"},
      {"after end", good + "pid 1\n", "after the end line"},
      {"future version", replaced(good, "fabric-nccl-profile 1", "fabric-nccl-profile 2"),
       "format version 2"},
      {"bad number", replaced(good, "sequence 17", "sequence 1x7"), "sequence: not a number"},
      {"negative counter", replaced(good, "ops 10 ", "ops -10 "), "ops: not a number"},
      {"overflow", replaced(good, "sequence 17", "sequence 99999999999999999999999"),
       "not a number"},
      {"repeated header", replaced(good, "abi ", "pid 9\nabi "), "pid: repeated"},
      {"missing pid", replaced(good, "pid 4242\n", ""), "pid is missing"},
      {"zero interval", replaced(good, "interval_ms 10000", "interval_ms 0"),
       "not between 1 and 3600000"},
      {"cell first",
       replaced(good, "comm 9f86d081884c7d65", "cell send 8 ops 1\ncomm 9f86d081884c7d65"),
       "cell before any comm"},
      {"short hash", replaced(good, "comm 9f86d081884c7d65", "comm 9f86"), "16 hex digits"},
      {"rank out of range", replaced(good, "nranks 16 rank 3", "nranks 16 rank 16"),
       "rank 16 of 16"},
      {"negative node count", replaced(good, "rank 3 nnodes 2", "rank 3 nnodes -1"), "nnodes -1"},
      {"repeated comm and rank",
       replaced(good, "comm 0123456789abcdef nranks 2 rank 0",
                "comm 9f86d081884c7d65 nranks 16 rank 3"),
       "rank 3: repeated"},
      {"comm time in part", replaced(good, " last_busy_ns 7700000\n", "\n"),
       "comm: last_busy_ns is missing"},
      {"comm time repeated", replaced(good, " busy_ns 912000000", " busy_ns 1 busy_ns 2"),
       "busy_ns: repeated"},
      {"comm time negative", replaced(good, " busy_ns 912000000", " busy_ns -1"),
       "busy_ns: not a number"},
      {"unknown collective", replaced(good, "cell send", "cell scan"), "unknown collective"},
      {"odd size", replaced(good, "cell send 8 ", "cell send 9 "), "not 0 or a power of two"},
      {"missing field", replaced(good, " last_busy_ns 500", ""), "last_busy_ns is missing"},
      {"repeated cell", replaced(good, "cell all_gather 0", "cell all_reduce 1048576"), "repeated"},
      {"more timed than done",
       replaced(good, "ops 10 bytes 80 timed_ops 10", "ops 10 bytes 80 timed_ops 11"),
       "more timed operations"},
      {"header after comms", replaced(good, "end\n", "pid 3\nend\n"), "after the communicators"},
      {"empty line", replaced(good, "abi ", "\nabi "), "empty line"},
      {"nul byte", replaced(good, "abi ncclProfiler_v5", std::string("abi ncclProfiler_v5\0x", 21)),
       "not printable"},
      {"escape", replaced(good, "abi ", "abi \x1b[31m"), "not printable"},
      {"tab", replaced(good, "pid 4242", "pid\t4242"), "not printable"},
  };
  for (const auto& c : cases) {
    auto parsed = parse_profile(c.text, "shared/" + c.name);
    ASSERT_FALSE(parsed.ok()) << c.name;
    EXPECT_NE(parsed.error().message().find(c.reason), std::string::npos)
        << c.name << ": " << parsed.error().message();
    EXPECT_NE(parsed.error().message().find("shared/" + c.name), std::string::npos);
  }
}

TEST(ProfileFormat, LimitsBoundTheWork) {
  const std::string good = render_profile(sample());
  ParseLimits small;
  small.max_bytes = good.size() - 1;
  EXPECT_FALSE(parse_profile(good, "big", small).ok());
  small = {};
  small.max_line = 40;
  auto long_line = parse_profile(good, "long", small);
  ASSERT_FALSE(long_line.ok());
  EXPECT_NE(long_line.error().message().find("longer than 40 bytes"), std::string::npos);
  small = {};
  small.max_comms = 1;
  auto comms = parse_profile(good, "comms", small);
  ASSERT_FALSE(comms.ok());
  EXPECT_NE(comms.error().message().find("more than 1 communicators"), std::string::npos);
  // Cells are counted as they come, over every communicator: a file cannot make the
  // parser hold more than max_cells of them, whatever its communicators.
  small = {};
  small.max_cells = 2;
  auto cells = parse_profile(good, "cells", small);
  ASSERT_FALSE(cells.ok());
  EXPECT_NE(cells.error().message().find("more than 2 cells"), std::string::npos);
  small.max_cells = 3;
  EXPECT_TRUE(parse_profile(good, "cells", small).ok());
}

// interval_ms is multiplied by the reader: a value beyond what the plugin writes (an
// hour) is refused, not carried into an overflow.
TEST(ProfileFormat, IntervalsBeyondAnHourAreRefused) {
  const std::string good = render_profile(sample());
  for (const char* value : {"3600001", "9223372036854775807"}) {
    std::string text = good;
    text.replace(text.find("interval_ms 10000"), 17, std::string("interval_ms ") + value);
    auto parsed = parse_profile(text, "interval");
    ASSERT_FALSE(parsed.ok()) << value;
    EXPECT_NE(parsed.error().message().find("interval_ms: not between 1 and 3600000"),
              std::string::npos);
  }
}

} // namespace
} // namespace fabric::nccl_profiler
