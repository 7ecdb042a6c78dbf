// The bandwidth loop's selective signaling interval.
#include <gtest/gtest.h>

#include "probes/rdma/rdma_bw.h"
#include "probes/rdma/rdma_connect.h"

namespace fabric::probes {
namespace {

TEST(RdmaBwSignalInterval, HalfTheTxDepthAtMost64) {
  EXPECT_EQ(signal_interval(128, 65536), 64u); // perftest's defaults: every 64th
  EXPECT_EQ(signal_interval(16, 65536), 8u);
  EXPECT_EQ(signal_interval(1, 65536), 1u);
  EXPECT_EQ(signal_interval(8192, 2), 64u);
}

// A QP asks for its first completion after at most kSignalBytes of messages, so large
// messages on many QPs cannot keep the loop waiting past the stall timeout.
TEST(RdmaBwSignalInterval, LargeMessagesAreSignalledWithinAFewMegabytes) {
  EXPECT_EQ(signal_interval(128, 1 << 20), 4u);
  EXPECT_EQ(signal_interval(128, 16 << 20), 1u);
  EXPECT_EQ(signal_interval(128, 1ull << 30), 1u);
  for (uint64_t size = 1; size <= (1ull << 30); size *= 2) {
    uint32_t every = signal_interval(128, size);
    EXPECT_GE(every, 1u) << size;
    EXPECT_LE(every * size, std::max<uint64_t>(kSignalBytes, size)) << size;
  }
}

// On loopback this side's address is the peer's: the error says "choosing a GID for
// 127.0.0.1 on lo" once, not again as "choosing the GID for 127.0.0.1".
TEST(RdmaGidChoice, ErrorOnLoopbackNamesTheAddressOnce) {
  auto chosen = choose_local_gid(SysfsReader(FABRIC_TEST_DATA_DIR "/probe/no_such_root"),
                                 std::nullopt, 1, std::nullopt, "127.0.0.1");
  ASSERT_FALSE(chosen.ok());
  const std::string message = chosen.error().message();
  EXPECT_NE(message.find("choosing a GID for 127.0.0.1 on lo"), std::string::npos) << message;
  EXPECT_EQ(message.find("127.0.0.1"), message.rfind("127.0.0.1")) << message;
}

} // namespace
} // namespace fabric::probes
