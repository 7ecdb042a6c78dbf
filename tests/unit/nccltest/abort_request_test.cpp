#include "nccltest/abort_request.h"

#include <gtest/gtest.h>

#include <thread>

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;

TEST(AbortRequest, TheFirstOrderWins) {
  AbortRequest r;
  EXPECT_FALSE(r.requested());
  EXPECT_TRUE(r.post(5, "watchdog: rank 1 is behind"));
  EXPECT_FALSE(r.post(2, "rank 0 ended the run"));
  EXPECT_TRUE(r.requested());
  EXPECT_EQ(r.exit_code(), 5);
  EXPECT_EQ(r.reason(), "watchdog: rank 1 is behind");
}

TEST(AbortRequest, APosterLearnsThatTheOwnerTookOver) {
  AbortRequest r;
  std::thread owner([&] {
    while (!r.requested())
      std::this_thread::yield();
    r.take_over();
  });
  r.post(5, "watchdog");
  EXPECT_TRUE(r.wait_for_owner(60s));
  owner.join();
}

TEST(AbortRequest, APosterStopsWaitingForAnOwnerThatNeverPolls) {
  AbortRequest r;
  r.post(5, "watchdog");
  EXPECT_FALSE(r.wait_for_owner(10ms));
}

} // namespace
} // namespace fabric::nccltest
