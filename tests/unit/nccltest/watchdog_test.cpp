// The watchdog's bookkeeping on an injected clock: when it fires and whom it names.
#include <gtest/gtest.h>

#include "nccltest/watchdog.h"

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;

struct Board : ::testing::Test {
  WatchdogClock::time_point t0 = WatchdogClock::now();
  ProgressBoard board{4, 5s, t0};

  void SetUp() override {
    for (int r = 0; r < 4; ++r) {
      board.set_label(r, {"node" + std::to_string(r), "host memory"});
      board.connected(r, t0);
    }
  }
  Beat beat(uint64_t phase, bool finished, std::size_t bytes = 1024) {
    return {phase, finished, "timed loop", "all_reduce", bytes, false};
  }
};

TEST_F(Board, QuietBeforeTheTimeout) {
  for (int r = 0; r < 4; ++r)
    board.beat(r, beat(3, false), t0 + 1s);
  EXPECT_FALSE(board.check(t0 + 5s).has_value());
  EXPECT_TRUE(board.check(t0 + 6500ms).has_value());
}

TEST_F(Board, TheRankThatStalledIsNamedAsBehind) {
  board.beat(0, beat(4, false, 2048), t0 + 2s);
  board.beat(1, beat(4, false, 2048), t0 + 2s);
  board.beat(2, beat(3, true, 1024), t0 + 1s); // finished the previous phase, stopped there
  board.beat(3, beat(4, false, 2048), t0 + 2s);
  auto report = board.check(t0 + 6100ms);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->behind, std::vector<int>{2});
  ASSERT_EQ(report->waiting.size(), 4u);
  EXPECT_TRUE(report->waiting[2].behind);
  EXPECT_EQ(report->waiting[2].state, "finished all_reduce 1024 B out-of-place timed loop 5.1 s "
                                      "ago and has not started the next phase");
  EXPECT_EQ(report->waiting[0].state, "in all_reduce 2048 B out-of-place timed loop for 4.1 s");
  EXPECT_EQ(report->cause,
            "rank 2 (node2, host memory) is behind every other rank: look there first");
  std::string text = render_hang_report(*report);
  EXPECT_NE(text.find("#   rank 2 (node2, host memory): finished"), std::string::npos) << text;
  EXPECT_NE(text.find("<- behind"), std::string::npos);
}

TEST_F(Board, EveryoneInTheSameCollectiveIsANetworkHang) {
  for (int r = 0; r < 4; ++r)
    board.beat(r, beat(7, false), t0 + 1s);
  auto report = board.check(t0 + 7s);
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->behind.empty());
  EXPECT_NE(report->cause.find("the collective itself made no progress"), std::string::npos);
}

TEST_F(Board, FinishedRanksAreNotWaitedFor) {
  board.beat(0, beat(9, true), t0 + 1s);
  board.finished(1, t0 + 1s);
  board.finished(2, t0 + 1s);
  board.finished(3, t0 + 1s);
  auto report = board.check(t0 + 10s);
  ASSERT_TRUE(report.has_value()); // rank 0 itself stopped after its last phase
  ASSERT_EQ(report->waiting.size(), 1u);
  EXPECT_EQ(report->waiting[0].rank, 0);
  board.finished(0, t0 + 10s);
  EXPECT_FALSE(board.check(t0 + 100s).has_value());
  EXPECT_TRUE(board.all_finished());
}

TEST_F(Board, ALostRankFiresAtOnceAndIsNamed) {
  for (int r = 0; r < 4; ++r)
    board.beat(r, beat(5, false), t0 + 1s);
  board.lost(3, t0 + 2s);
  auto report = board.check(t0 + 2100ms);
  ASSERT_TRUE(report.has_value());
  EXPECT_NE(report->cause.find("rank 3 (node3, host memory) is gone"), std::string::npos);
  EXPECT_NE(report->waiting[3].state.find("lost its control connection"), std::string::npos);
}

TEST(BoardSetup, ARankThatNeverReportsIsNamed) {
  auto t0 = WatchdogClock::now();
  ProgressBoard board(3, 2s, t0);
  board.connected(0, t0);
  board.connected(1, t0);
  board.beat(0, {1, false, "setup", "", 0, false}, t0);
  board.beat(1, {1, false, "setup", "", 0, false}, t0);
  auto report = board.check(t0 + 3s);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->behind, std::vector<int>{2});
  EXPECT_EQ(report->waiting[2].state, "never reported (3.0 s since the start)");
}

} // namespace
} // namespace fabric::nccltest
