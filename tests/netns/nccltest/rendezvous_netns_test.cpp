// fabric-nccltest's rendezvous attacked over a network: the built binary as rank 0 in a
// namespace of the test's own (MASTER_ADDR on its veth, and a second address beside it),
// the real rank 1 and the strangers in the namespace at the veth's other end. A rank that
// got through the rendezvous goes on to look for a GPU and stops there, on every rank
// alike ("the nccl backend: ..."; the ranks are shown no GPU, also on a node that has
// one): that line is how a test knows the ranks met.
#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <optional>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/netns.h"
#include "libs/agent_channel/framing.h"
#include "libs/agent_channel/tcp_socket.h"
#include "nccltest/control_channel.h"
#include "tests/netns/probe/probe_processes.h"
#include "tests/netns/test_network.h"

namespace fabric::nccltest {
namespace {

using namespace std::chrono_literals;
using testing::BackgroundProcess;
using testing::TempDir;
using testing::TestNetwork;
using testing::wait_for;

constexpr const char* kMasterAddr = "10.81.0.1";
constexpr const char* kOtherAddr = "10.81.0.3"; // rank 0's namespace, not MASTER_ADDR
constexpr const char* kPeerAddr = "10.81.0.2";
constexpr uint16_t kMasterPort = 29500;
constexpr const char* kToken = "the job's secret, 32 bytes long!";
// What every rank says once the rendezvous is behind it, on a machine without a GPU.
constexpr const char* kMet = "the nccl backend:";

constexpr bool kWithToken = true;

std::size_t open_descriptors(pid_t pid) {
  std::size_t count = 0;
  const std::string path = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* dir = ::opendir(path.c_str())) {
    while (::readdir(dir) != nullptr)
      ++count;
    ::closedir(dir);
  }
  return count > 2 ? count - 2 : 0; // "." and ".."
}

class RendezvousNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!testing::can_manage_network()) GTEST_SKIP() << testing::skip_reason();
    master_ns_ = net_.add_namespace("r0");
    peer_ns_ = net_.add_namespace("peer");
    auto [a, b] = net_.add_veth("v", net_.ns_name("r0"), net_.ns_name("peer"));
    ASSERT_FALSE(a.empty());
    for (const char* address : {kMasterAddr, kOtherAddr}) {
      ASSERT_TRUE(testing::run_checked({"ip", "-n", net_.ns_name("r0"), "addr", "add",
                                        std::string(address) + "/24", "dev", a})
                      .ok());
    }
    ASSERT_TRUE(testing::run_checked({"ip", "-n", net_.ns_name("peer"), "addr", "add",
                                      std::string(kPeerAddr) + "/24", "dev", b})
                    .ok());
    token_file_ = dir_.file("token");
    ASSERT_TRUE(write_file_atomic(token_file_, std::string(kToken) + "\n").ok());
  }

  // The built binary as one rank of two, in rank 0's namespace or the peer's, with -T 0
  // (which made the run's exchanges wait an hour); `descriptors` is its RLIMIT_NOFILE.
  std::unique_ptr<BackgroundProcess> start_rank(int rank,
                                                const std::string& rendezvous_timeout = "20",
                                                bool token = false,
                                                std::optional<int> descriptors = std::nullopt) {
    const std::string name = "rank" + std::to_string(rank) + "-" + std::to_string(started_++);
    std::vector<std::string> argv = {"ip",
                                     "netns",
                                     "exec",
                                     net_.ns_name(rank == 0 ? "r0" : "peer"),
                                     "env",
                                     "CUDA_VISIBLE_DEVICES=", // no GPU, even on a node with one
                                     "RANK=" + std::to_string(rank),
                                     "WORLD_SIZE=2",
                                     std::string("MASTER_ADDR=") + kMasterAddr,
                                     "MASTER_PORT=" + std::to_string(kMasterPort)};
    if (token) argv.push_back("FABRIC_NCCLTEST_TOKEN_FILE=" + token_file_);
    if (descriptors) {
      const std::string n = std::to_string(*descriptors);
      argv.insert(argv.end(), {"prlimit", "--nofile=" + n + ":" + n, "--"});
    }
    argv.insert(argv.end(), {FABRIC_NCCLTEST_BINARY, "--backend", "nccl", "-b", "8", "-e", "8",
                             "-T", "0", "--rendezvous-timeout", rendezvous_timeout});
    return std::make_unique<BackgroundProcess>(argv, dir_.file(name + ".out"),
                                               dir_.file(name + ".err"));
  }

  // Rank 0 listens once its socket shows in its namespace (no connection of ours needed).
  bool rank_zero_listens(BackgroundProcess& rank0) {
    return wait_for(
        [&] {
          auto ss = testing::run_checked({"ip", "netns", "exec", net_.ns_name("r0"), "ss", "-Htln",
                                          "sport = :" + std::to_string(kMasterPort)});
          return !rank0.running() || (ss.ok() && !ss->empty());
        },
        20s);
  }

  // A connection from the peer's namespace, as a stranger makes it.
  Result<UniqueFd> stranger_connect(const std::string& address = kMasterAddr) {
    return netns::run_in(peer_ns_, [&]() -> Result<UniqueFd> {
      FABRIC_ASSIGN_OR_RETURN(UniqueFd fd, probes::connect_tcp(address, kMasterPort, 2s));
      timeval bound{5, 0}; // no read of a stranger's waits longer
      ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
      return fd;
    });
  }

  // A hello for rank 1 of 2 in rank 0's protocol, as a stranger writes it by hand; `more`
  // goes at the end of the object.
  static std::string stranger_hello(const std::string& more = "") {
    return probes::encode_frame(R"({"type":"hello","protocol":)" +
                                std::to_string(kControlProtocol) + R"(,"rank":1,"world_size":2)" +
                                more + "}");
  }

  static bool send_all(int fd, const std::string& bytes) {
    return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  // Waits (bounded) for the rank to end, killing it past `limit`; its stderr.
  static std::string ended(BackgroundProcess& rank, std::chrono::seconds limit = 60s) {
    if (!wait_for([&] { return !rank.running(); }, limit)) {
      (void)rank.stop(SIGKILL, 5s);
      return "still running after " + std::to_string(limit.count()) + " s: " + rank.stderr_text();
    }
    return rank.stderr_text();
  }

  TestNetwork net_;
  TempDir dir_;
  std::string master_ns_, peer_ns_, token_file_;
  int started_ = 0;
};

TEST_F(RendezvousNetns, RankZeroListensOnlyOnMasterAddr) {
  auto rank0 = start_rank(0);
  ASSERT_TRUE(rank_zero_listens(*rank0)) << rank0->stderr_text();
  ASSERT_TRUE(rank0->running()) << rank0->stderr_text();
  // Another address of rank 0's namespace: nothing listens there (it used to bind every
  // address, whatever MASTER_ADDR said).
  auto elsewhere = stranger_connect(kOtherAddr);
  EXPECT_FALSE(elsewhere.ok()) << "rank 0 answered on " << kOtherAddr;
  auto rank1 = start_rank(1);
  EXPECT_NE(ended(*rank1).find(kMet), std::string::npos) << rank1->stderr_text();
  EXPECT_NE(ended(*rank0).find(kMet), std::string::npos) << rank0->stderr_text();
}

TEST_F(RendezvousNetns, AStrangerWithoutTheTokenNeitherJoinsNorAborts) {
  auto rank0 = start_rank(0, "20", kWithToken);
  ASSERT_TRUE(rank_zero_listens(*rank0)) << rank0->stderr_text();
  // A stranger who says "hello rank 1" first, as the control channel's own client.
  auto bare = netns::run_in(peer_ns_, [] {
    return ControlClient::connect({{kMasterAddr, kMasterPort}}, 1, 2, WatchdogClock::now() + 10s);
  });
  ASSERT_FALSE(bare.ok()) << "a stranger without the token took rank 1";
  EXPECT_NE(bare.error().message().find("asks for the job's token"), std::string::npos)
      << bare.error().message();
  // One that ignores the challenge and orders an abort.
  auto raw = stranger_connect();
  ASSERT_TRUE(raw.ok()) << raw.error().message();
  ASSERT_TRUE(send_all(raw->get(), stranger_hello(R"(,"nonce":")" + std::string(64, 'a') + "\"")));
  ASSERT_TRUE(send_all(
      raw->get(), probes::encode_frame(R"({"type":"abort","code":3,"reason":"FORGED abort"})")));
  // The real rank 1 proves the token; both ranks get past the rendezvous.
  auto rank1 = start_rank(1, "20", kWithToken);
  const std::string one = ended(*rank1), zero = ended(*rank0);
  EXPECT_NE(one.find(kMet), std::string::npos) << one;
  EXPECT_NE(zero.find(kMet), std::string::npos) << zero;
  EXPECT_EQ((one + zero).find("FORGED"), std::string::npos) << one << zero;
  EXPECT_EQ(one.find("already joined"), std::string::npos) << one;
}

// The issue's ~1,020 junk connections took rank 0 to its descriptor limit (1,024 here, as
// a container's default), and the real rank never joined.
TEST_F(RendezvousNetns, JunkConnectionsDoNotExhaustRankZerosDescriptors) {
  auto rank0 = start_rank(0, "20", !kWithToken, 1024);
  ASSERT_TRUE(rank_zero_listens(*rank0)) << rank0->stderr_text();
  const std::size_t before = open_descriptors(rank0->pid());
  auto sent = netns::run_in(peer_ns_, []() -> Result<int> {
    int n = 0;
    for (int i = 0; i < 1100; ++i) {
      auto junk = probes::connect_tcp(kMasterAddr, kMasterPort, 2s);
      if (junk.ok() && send_all(junk->get(), probes::encode_frame("not json"))) ++n;
    } // each closed on the stranger's side at once
    return n;
  });
  ASSERT_TRUE(sent.ok()) << sent.error().message();
  EXPECT_GE(*sent, 1050);
  // Rank 0 closes its end of each as it drops it.
  EXPECT_TRUE(wait_for([&] { return open_descriptors(rank0->pid()) <= before + 4; }, 20s))
      << open_descriptors(rank0->pid()) << " descriptors open, " << before << " before";
  auto rank1 = start_rank(1);
  EXPECT_NE(ended(*rank1).find(kMet), std::string::npos) << rank1->stderr_text();
  EXPECT_NE(ended(*rank0).find(kMet), std::string::npos) << rank0->stderr_text();
}

// Each of these used to hold rank 0 for 10 s, one after the other: 30 s, against the
// rank's 20 s to join.
TEST_F(RendezvousNetns, ThreeOneByteSendersDoNotHoldUpARealRank) {
  auto rank0 = start_rank(0);
  ASSERT_TRUE(rank_zero_listens(*rank0)) << rank0->stderr_text();
  std::vector<UniqueFd> slow;
  for (int i = 0; i < 3; ++i) {
    auto fd = stranger_connect();
    ASSERT_TRUE(fd.ok()) << fd.error().message();
    ASSERT_TRUE(send_all(fd->get(), std::string(1, '\0'))); // a frame's first byte
    slow.push_back(std::move(*fd));
  }
  auto rank1 = start_rank(1);
  EXPECT_NE(ended(*rank1).find(kMet), std::string::npos) << rank1->stderr_text();
  EXPECT_NE(ended(*rank0).find(kMet), std::string::npos) << rank0->stderr_text();
}

// Without a token a stranger can take rank 1; when it goes quiet, rank 0 gives up at its
// --rendezvous-timeout (3 s), where it used to wait the run's exchange timeout (an hour
// with -T 0).
TEST_F(RendezvousNetns, AQuietRankIsGivenUpAtTheRendezvousTimeout) {
  auto rank0 = start_rank(0, "3");
  ASSERT_TRUE(rank_zero_listens(*rank0)) << rank0->stderr_text();
  auto stranger = stranger_connect();
  ASSERT_TRUE(stranger.ok()) << stranger.error().message();
  ASSERT_TRUE(send_all(stranger->get(), stranger_hello()));
  probes::Channel channel(UniqueFd(::dup(stranger->get())), "rank 0");
  auto welcome = channel.receive_text(10s);
  ASSERT_TRUE(welcome.ok()) << welcome.error().message();
  ASSERT_NE(welcome->find("welcome"), std::string::npos) << *welcome;
  // Nothing more from the stranger; its connection stays open.
  const std::string zero = ended(*rank0);
  EXPECT_NE(zero.find("no answer from ranks 1"), std::string::npos) << zero;
}

// Rank 1's waits are bounded too: a "rank 0" that accepts and never answers, and one that
// never comes, both end rank 1 at its --rendezvous-timeout with a message naming MASTER_ADDR.
TEST_F(RendezvousNetns, RankOnesWaitsEndAtItsRendezvousTimeout) {
  auto silent =
      netns::run_in(master_ns_, [] { return probes::listen_tcp(kMasterAddr, kMasterPort); });
  ASSERT_TRUE(silent.ok()) << silent.error().message();
  auto facing_silence = start_rank(1, "3");
  const std::string silence = ended(*facing_silence);
  EXPECT_NE(silence.find(kMasterAddr), std::string::npos) << silence;
  EXPECT_EQ(silence.find(kMet), std::string::npos) << silence;
  *silent = UniqueFd();
  auto facing_nothing = start_rank(1, "3");
  const std::string nothing = ended(*facing_nothing);
  EXPECT_NE(nothing.find("MASTER_ADDR:MASTER_PORT"), std::string::npos) << nothing;
}

} // namespace
} // namespace fabric::nccltest
