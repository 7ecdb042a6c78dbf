// The probe's out-of-band channel: framing, deadlines, and refusing garbage.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

#include "libs/agent_channel/channel.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;

TEST(ProbeChannel, CarriesWholeMessagesBothWays) {
  auto pair = make_channel_pair();
  ASSERT_TRUE(pair.ok()) << pair.error().message();
  auto& [a, b] = *pair;
  ASSERT_TRUE(a.send(R"({"type":"hello","version":1})").ok());
  auto got = b.receive(1s);
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_STREQ((*got)["type"].GetString(), "hello");
  EXPECT_EQ((*got)["version"].GetInt(), 1);

  // A message larger than a socket buffer crosses while the reader drains it.
  std::string big = "{\"pad\":\"" + std::string(600 * 1024, 'x') + "\"}";
  std::thread writer([&] { ASSERT_TRUE(b.send(big).ok()); });
  auto text = a.receive_text(5s);
  writer.join();
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(*text, big);
}

TEST(ProbeChannel, ReceiveTimesOutInsteadOfHanging) {
  auto pair = make_channel_pair();
  ASSERT_TRUE(pair.ok());
  auto r = pair->first.receive(50ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kTimeout);
}

TEST(ProbeChannel, PeerCloseIsReported) {
  auto pair = make_channel_pair();
  ASSERT_TRUE(pair.ok());
  pair->second.close();
  auto r = pair->first.receive(1s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("connection closed"), std::string::npos)
      << r.error().message();
}

TEST(ProbeChannel, RefusesOversizedFrameFromAStranger) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Channel ours{UniqueFd(fds[0]), "stranger"};
  UniqueFd theirs{fds[1]};
  // "GET " as a big-endian length is about 1.2 GB: an HTTP client on the agent's port.
  ASSERT_EQ(::write(theirs.get(), "GET / HTTP/1.1\r\n", 16), 16);
  auto r = ours.receive(1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDecode);
  EXPECT_NE(r.error().message().find("fabric-probe agent"), std::string::npos);
}

TEST(ProbeChannel, MalformedJsonIsADecodeError) {
  auto pair = make_channel_pair();
  ASSERT_TRUE(pair.ok());
  ASSERT_TRUE(pair->first.send("{not json").ok());
  auto r = pair->second.receive(1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDecode);
}

} // namespace
} // namespace fabric::probes
