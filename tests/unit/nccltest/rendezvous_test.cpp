// The rendezvous on loopback: ranks as real processes meeting rank 0 (also one that comes
// up late, and one that never does), and the control channel's refusals of what it must
// not accept.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>

#include "libs/agent_channel/tcp_socket.h"
#include "nccltest/control_channel.h"
#include "nccltest/rendezvous.h"

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;

uint16_t free_port() {
  auto fd = probes::listen_tcp("127.0.0.1", 0);
  EXPECT_TRUE(fd.ok());
  return *probes::bound_port(fd->get());
}

Launch rendezvous(int rank, int size, uint16_t port) {
  Launch l;
  l.kind = LaunchKind::kRendezvous;
  l.rank = rank;
  l.world_size = size;
  l.master_addr = "127.0.0.1";
  l.master_port = port;
  return l;
}

// A rank in its own process: joins, exchanges, checks what it got. Exit 0 when every rank's
// value arrived in rank order and rank 0's broadcast reached it.
pid_t spawn_rank(int rank, int size, uint16_t port) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  auto group = TcpGroup::join(rendezvous(rank, size, port), nullptr, 20s, 20s);
  if (!group.ok()) ::_exit(10);
  auto all = (*group)->allgather("from " + std::to_string(rank));
  if (!all.ok() || all->size() != static_cast<std::size_t>(size)) ::_exit(11);
  for (int r = 0; r < size; ++r) {
    if ((*all)[r] != "from " + std::to_string(r)) ::_exit(12);
  }
  std::string id(128, '\0');
  for (int i = 0; i < 128; ++i)
    id[i] = static_cast<char>(i * 7); // binary, like an NCCL id
  auto shared = (*group)->broadcast(rank == 0 ? id : "");
  if (!shared.ok() || *shared != id) ::_exit(13);
  // Rank 0 must not close before the others have their answer.
  auto last = (*group)->allgather("done");
  ::_exit(last.ok() ? 0 : 14);
}

int wait_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(Rendezvous, FourProcessesMeetAndExchange) {
  const uint16_t port = free_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < 4; ++r)
    pids.push_back(spawn_rank(r, 4, port));
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(wait_status(pids[r]), 0) << "rank " << r;
}

TEST(Rendezvous, RanksWaitForAMasterThatComesUpLate) {
  const uint16_t port = free_port();
  std::vector<pid_t> pids;
  for (int r = 1; r < 3; ++r)
    pids.push_back(spawn_rank(r, 3, port));
  // Rank 0's pod starts later than the others: they must keep trying.
  std::this_thread::sleep_for(1500ms);
  pids.insert(pids.begin(), spawn_rank(0, 3, port));
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(wait_status(pids[r]), 0) << "rank " << r;
}

TEST(Rendezvous, AMasterThatNeverComesIsABoundedWaitWithAClearError) {
  const uint16_t port = free_port();
  auto start = std::chrono::steady_clock::now();
  auto group = TcpGroup::join(rendezvous(1, 2, port), nullptr, 1500ms, 5s);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.error().code(), ErrorCode::kTimeout);
  const std::string m = group.error().message();
  EXPECT_NE(m.find("rank 1 joining the rendezvous at 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("MASTER_ADDR:MASTER_PORT"), std::string::npos) << m;
  EXPECT_LT(elapsed, 6s);
}

TEST(Rendezvous, RankZeroGivesUpOnRanksThatNeverJoinAndNamesThem) {
  const uint16_t port = free_port();
  auto group = TcpGroup::join(rendezvous(0, 3, port), nullptr, 1s, 5s);
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.error().message().find("ranks 1, 2 did not join"), std::string::npos)
      << group.error().message();
}

Result<probes::Channel> raw_connection(uint16_t port) {
  FABRIC_ASSIGN_OR_RETURN(UniqueFd fd, probes::connect_tcp("127.0.0.1", port, 2s));
  return probes::Channel(std::move(fd), "server");
}

TEST(ControlChannel, RefusesStrangersAndMismatchedRanks) {
  auto server = ControlServer::start("127.0.0.1", 0, 3, nullptr);
  ASSERT_TRUE(server.ok());
  const uint16_t port = (*server)->port();
  std::vector<probes::Endpoint> where{{"127.0.0.1", port}};

  // Not our protocol at all: a huge length prefix. The server drops it and carries on.
  auto stranger = raw_connection(port);
  ASSERT_TRUE(stranger.ok());
  const char junk[] = "\xff\xff\xff\xffGET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(::send(stranger->fd(), junk, sizeof junk - 1, MSG_NOSIGNAL),
            static_cast<ssize_t>(sizeof junk - 1));
  EXPECT_FALSE(stranger->receive_text(5s).ok()); // closed on us

  auto wrong_world = ControlClient::connect(where, 1, 4, WatchdogClock::now() + 5s);
  ASSERT_FALSE(wrong_world.ok());
  EXPECT_NE(wrong_world.error().message().find("WORLD_SIZE 4 differs from rank 0's 3"),
            std::string::npos)
      << wrong_world.error().message();
  auto rank_zero = ControlClient::connect(where, 0, 3, WatchdogClock::now() + 5s);
  ASSERT_FALSE(rank_zero.ok());
  EXPECT_NE(rank_zero.error().message().find("rank 0 is not one of 1 to 2"), std::string::npos);

  auto one = ControlClient::connect(where, 1, 3, WatchdogClock::now() + 5s);
  ASSERT_TRUE(one.ok()) << one.error().message();
  auto again = ControlClient::connect(where, 1, 3, WatchdogClock::now() + 5s);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message().find("rank 1 has already joined"), std::string::npos);
  auto two = ControlClient::connect(where, 2, 3, WatchdogClock::now() + 5s);
  ASSERT_TRUE(two.ok());
  EXPECT_TRUE((*server)->wait_for_ranks(WatchdogClock::now() + 5s).ok());
}

TEST(ControlChannel, BeatsReachTheBoardAndAbortsReachTheRanks) {
  auto t0 = WatchdogClock::now();
  ProgressBoard board(2, 2s, t0);
  auto server = ControlServer::start("127.0.0.1", 0, 2, &board);
  ASSERT_TRUE(server.ok());
  auto client = ControlClient::connect({{"127.0.0.1", (*server)->port()}}, 1, 2, t0 + 5s);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*server)->wait_for_ranks(t0 + 5s).ok());

  std::mutex mutex;
  std::condition_variable arrived;
  std::optional<std::pair<int, std::string>> abort;
  (*client)->on_abort([&](int code, const std::string& reason) {
    std::lock_guard lock(mutex);
    abort = {code, reason};
    arrived.notify_all();
  });
  board.beat(0, {2, false, "timed loop", "all_reduce", 4096, false}, t0);
  (*client)->beat({1, true, "warm-up", "all_reduce", 0, false});
  // The beat travels asynchronously: wait until the board has it (rank 1 behind rank 0).
  std::optional<HangReport> report;
  for (int i = 0; i < 100 && !(report && !report->behind.empty()); ++i) {
    std::this_thread::sleep_for(50ms);
    report = board.check(WatchdogClock::now() + 10s);
  }
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->behind, std::vector<int>{1});

  (*server)->send_abort(kExitHang, "watchdog: rank 1 is behind");
  std::unique_lock lock(mutex);
  ASSERT_TRUE(arrived.wait_for(lock, 5s, [&] { return abort.has_value(); }));
  EXPECT_EQ(abort->first, kExitHang);
  EXPECT_EQ(abort->second, "rank 0 ended the run: watchdog: rank 1 is behind");
}

TEST(ControlChannel, ARankThatVanishesIsLostOnTheBoard) {
  auto t0 = WatchdogClock::now();
  ProgressBoard board(2, 60s, t0);
  auto server = ControlServer::start("127.0.0.1", 0, 2, &board);
  ASSERT_TRUE(server.ok());
  {
    auto client = ControlClient::connect({{"127.0.0.1", (*server)->port()}}, 1, 2, t0 + 5s);
    ASSERT_TRUE(client.ok());
    ASSERT_TRUE((*server)->wait_for_ranks(t0 + 5s).ok());
    board.finished(0, t0);
  } // closed without saying it finished
  std::optional<HangReport> report;
  for (int i = 0; i < 100 && !report; ++i) {
    std::this_thread::sleep_for(50ms);
    report = board.check(WatchdogClock::now());
  }
  ASSERT_TRUE(report.has_value());
  EXPECT_NE(report->cause.find("rank 1 is gone"), std::string::npos) << report->cause;
}

TEST(ControlChannel, HexRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256; ++i)
    bytes += static_cast<char>(i);
  EXPECT_EQ(*from_hex(to_hex(bytes)), bytes);
  EXPECT_FALSE(from_hex("abc").ok());
  EXPECT_FALSE(from_hex("zz").ok());
}

} // namespace
} // namespace fabric::nccltest
