// The rendezvous against strangers on loopback: a rank must prove the job's token, a
// stranger's hello or abort is not obeyed, rank 0 must prove the token back, connections
// that send a byte and stop hold no one up, dropped connections give their descriptors
// back, and rank 0 listens only where MASTER_ADDR says.
#include <dirent.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "libs/agent_channel/framing.h"
#include "libs/agent_channel/tcp_socket.h"
#include "nccltest/control_channel.h"
#include "nccltest/rendezvous.h"
#include "nccltest/rendezvous_auth.h"
#include "tests/support/temp_dir.h"

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;

probes::Token token_of(const char* text) {
  auto token = probes::Token::from_text(text, "test");
  EXPECT_TRUE(token.ok());
  return *token;
}

std::size_t open_descriptors() {
  std::size_t count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dir != nullptr && ::readdir(dir) != nullptr)
    ++count;
  if (dir != nullptr) ::closedir(dir);
  return count;
}

UniqueFd raw_connect(uint16_t port, const std::string& host = "127.0.0.1") {
  auto fd = probes::connect_tcp(host, port, 2s);
  EXPECT_TRUE(fd.ok()) << fd.error().message();
  if (!fd.ok()) return UniqueFd();
  timeval bound{5, 0}; // no read in these tests waits longer
  ::setsockopt(fd->get(), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  return std::move(*fd);
}

void send_frame(int fd, const std::string& json) {
  const std::string framed = probes::encode_frame(json);
  ASSERT_EQ(::send(fd, framed.data(), framed.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(framed.size()));
}

uint16_t free_port() {
  auto probe = probes::listen_tcp("127.0.0.1", 0);
  EXPECT_TRUE(probe.ok());
  return probe.ok() ? *probes::bound_port(probe->get()) : 0;
}

// Rank 0 reads its connections without blocking; it must still take them and answer.
TEST(RendezvousHostile, RankZeroAnswersTheOnlyRankThatConnects) {
  auto server = ControlServer::start("127.0.0.1", 0, 2, nullptr);
  ASSERT_TRUE(server.ok());
  auto rank1 =
      ControlClient::connect({{"127.0.0.1", (*server)->port()}}, 1, 2, WatchdogClock::now() + 5s);
  ASSERT_TRUE(rank1.ok()) << rank1.error().message();
  EXPECT_TRUE((*server)->wait_for_ranks(WatchdogClock::now() + 5s).ok());
}

// Without a token a stranger can take a rank; when it then goes quiet, rank 0 gives up at
// --rendezvous-timeout, not at the run's exchange timeout (an hour when -T is 0).
TEST(RendezvousHostile, AQuietRankBeforeTheRunIsGivenUpAtTheRendezvousTimeout) {
  Launch launch;
  launch.kind = LaunchKind::kRendezvous;
  launch.world_size = 2;
  launch.master_addr = "127.0.0.1";
  launch.master_port = free_port();
  auto zero =
      std::async(std::launch::async, [&] { return TcpGroup::join(launch, nullptr, 2s, 3600s); });
  UniqueFd stranger;
  std::string reply;
  for (int i = 0; i < 200 && reply.find("welcome") == std::string::npos; ++i) {
    stranger = UniqueFd();
    auto fd = probes::connect_tcp("127.0.0.1", launch.master_port, 1s);
    if (!fd.ok()) {
      std::this_thread::sleep_for(25ms); // rank 0 not listening yet
      continue;
    }
    stranger = std::move(*fd);
    send_frame(stranger.get(), R"({"type":"hello","protocol":2,"rank":1,"world_size":2})");
    probes::Channel channel(UniqueFd(::dup(stranger.get())), "rank 0");
    reply = channel.receive_text(5s).value_or("");
  }
  ASSERT_NE(reply.find("welcome"), std::string::npos) << reply;
  auto group = zero.get();
  ASSERT_TRUE(group.ok()) << group.error().message();
  auto exchange = std::async(std::launch::async, [&] { return (*group)->allgather("facts"); });
  if (exchange.wait_for(60s) != std::future_status::ready) {
    (*group)->plane().server->stop(); // let the exchange return before failing the test
    FAIL() << "rank 0 still waits for the quiet rank after 60 s";
  }
  auto gathered = exchange.get();
  ASSERT_FALSE(gathered.ok());
  EXPECT_NE(gathered.error().message().find("no answer from ranks 1"), std::string::npos)
      << gathered.error().message();
}

TEST(RendezvousHostile, RanksProveTheJobsTokenAndStrangersCannotTakeARank) {
  auto server = ControlServer::start("127.0.0.1", 0, 2, nullptr,
                                     token_of("the job's secret, 32 bytes long!"));
  ASSERT_TRUE(server.ok());
  const std::vector<probes::Endpoint> where{{"127.0.0.1", (*server)->port()}};
  const auto deadline = [] { return WatchdogClock::now() + 5s; };

  // A stranger who says "hello rank 1" first, without the token: not welcomed.
  auto bare = ControlClient::connect(where, 1, 2, deadline());
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error().message().find("asks for the job's token"), std::string::npos)
      << bare.error().message();
  const probes::Token wrong = token_of("a guess at the secret, 32 bytes!");
  auto guessed = ControlClient::connect(where, 1, 2, deadline(), &wrong);
  ASSERT_FALSE(guessed.ok());
  EXPECT_NE(guessed.error().message().find("wrong proof of the job's token"), std::string::npos)
      << guessed.error().message();

  // A stranger's abort before joining is not obeyed.
  std::atomic<int> aborts{0};
  (*server)->on_abort_request([&](int, const std::string&) { ++aborts; });
  UniqueFd stranger = raw_connect((*server)->port());
  send_frame(stranger.get(), R"({"type":"hello","protocol":2,"rank":1,"world_size":2,)"
                             R"("nonce":")" +
                                 std::string(64, 'a') + R"("})");
  send_frame(stranger.get(), R"({"type":"abort","code":3,"reason":"forged"})");

  // The real rank 1 joins, and rank 0 proved the token back to it.
  const probes::Token right = token_of("the job's secret, 32 bytes long!");
  auto rank1 = ControlClient::connect(where, 1, 2, deadline(), &right);
  ASSERT_TRUE(rank1.ok()) << rank1.error().message();
  EXPECT_TRUE((*server)->wait_for_ranks(deadline()).ok());
  // The stranger's connection was closed: a read sees its end (after the challenge).
  char buffer[4096];
  ssize_t n = 0;
  do {
    n = ::recv(stranger.get(), buffer, sizeof buffer, 0);
  } while (n > 0);
  EXPECT_EQ(aborts.load(), 0);
}

TEST(RendezvousHostile, ARankWithTheTokenRefusesARankZeroWithout) {
  auto impostor = ControlServer::start("127.0.0.1", 0, 2, nullptr);
  ASSERT_TRUE(impostor.ok());
  const probes::Token token = token_of("the job's secret, 32 bytes long!");
  auto rank1 = ControlClient::connect({{"127.0.0.1", (*impostor)->port()}}, 1, 2,
                                      WatchdogClock::now() + 5s, &token);
  ASSERT_FALSE(rank1.ok());
  EXPECT_NE(rank1.error().message().find("not this job's rank 0"), std::string::npos)
      << rank1.error().message();
}

TEST(RendezvousHostile, ConnectionsThatSendAByteAndStopHoldNoOneUp) {
  auto server = ControlServer::start("127.0.0.1", 0, 2, nullptr);
  ASSERT_TRUE(server.ok());
  std::vector<UniqueFd> slow;
  for (int i = 0; i < 3; ++i) {
    slow.push_back(raw_connect((*server)->port()));
    ASSERT_EQ(::send(slow.back().get(), "\0", 1, MSG_NOSIGNAL), 1); // a frame's first byte
  }
  // Each of them once held rank 0 for 10 s; the rank has 5 s to join.
  auto rank1 =
      ControlClient::connect({{"127.0.0.1", (*server)->port()}}, 1, 2, WatchdogClock::now() + 5s);
  ASSERT_TRUE(rank1.ok()) << rank1.error().message();
  EXPECT_TRUE((*server)->wait_for_ranks(WatchdogClock::now() + 5s).ok());
}

TEST(RendezvousHostile, DroppedConnectionsGiveTheirDescriptorsBack) {
  auto server = ControlServer::start("127.0.0.1", 0, 2, nullptr);
  ASSERT_TRUE(server.ok());
  const std::size_t before = open_descriptors();
  for (int i = 0; i < 300; ++i) {
    UniqueFd junk = raw_connect((*server)->port());
    send_frame(junk.get(), "not json");
  } // each closed here on the client's side; rank 0 closes its end when it drops it
  // Rank 0's ends go as it drops them (poll: it works through them at its own pace).
  std::size_t now = open_descriptors();
  for (int i = 0; i < 200 && now > before + 4; ++i) {
    std::this_thread::sleep_for(50ms);
    now = open_descriptors();
  }
  EXPECT_LE(now, before + 4) << "rank 0 keeps the descriptors of dropped connections";
  auto rank1 =
      ControlClient::connect({{"127.0.0.1", (*server)->port()}}, 1, 2, WatchdogClock::now() + 5s);
  EXPECT_TRUE(rank1.ok()) << rank1.error().message();
}

TEST(RendezvousHostile, RankZeroListensOnlyWhereMasterAddrSays) {
  const uint16_t port = free_port();
  Launch launch;
  launch.kind = LaunchKind::kRendezvous;
  launch.world_size = 2;
  launch.master_addr = "127.0.0.1";
  launch.master_port = port;
  auto zero =
      std::async(std::launch::async, [&] { return TcpGroup::join(launch, nullptr, 10s, 10s); });
  // Once rank 0 answers on MASTER_ADDR, another of this host's addresses must not.
  bool listening = false;
  for (int i = 0; i < 200 && !listening; ++i) {
    listening = probes::connect_tcp("127.0.0.1", port, 1s).ok();
    if (!listening) std::this_thread::sleep_for(25ms);
  }
  ASSERT_TRUE(listening);
  auto elsewhere = probes::connect_tcp("127.0.0.2", port, 1s);
  EXPECT_FALSE(elsewhere.ok()) << "rank 0 answered on 127.0.0.2";
  Launch one = launch;
  one.rank = 1;
  auto rank1 = TcpGroup::join(one, nullptr, 10s, 10s);
  ASSERT_TRUE(rank1.ok()) << rank1.error().message();
  auto rank0 = zero.get();
  ASSERT_TRUE(rank0.ok()) << rank0.error().message();
}

TEST(RendezvousHostile, TheTokenComesFromTheFileTheLauncherNames) {
  EXPECT_FALSE(rendezvous_token(nullptr)->has_value());
  EXPECT_FALSE(rendezvous_token("")->has_value());
  auto missing = rendezvous_token("/nonexistent/token");
  EXPECT_FALSE(missing.ok());
  fabric::testing::TempDir dir;
  const std::string path = dir.file("token");
  ASSERT_TRUE(write_file_atomic(path, "short\n").ok());
  EXPECT_FALSE(rendezvous_token(path.c_str()).ok()) << "a guessable token is refused";
  ASSERT_TRUE(write_file_atomic(path, "0123456789abcdef0123456789abcdef\n").ok());
  auto token = rendezvous_token(path.c_str());
  ASSERT_TRUE(token.ok() && token->has_value());
  EXPECT_EQ((*token)->secret(), "0123456789abcdef0123456789abcdef");
}

} // namespace
} // namespace fabric::nccltest
