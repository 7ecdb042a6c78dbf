// fabric-probe bw and lat on real soft-RoCE (rdma_rxe), inside the lab (scripts/lab.sh).
//
// One node (vm.probe_rdma): the agent runs in this process on an ephemeral port, the
// client talks to it over rxe0 at the node's own address, through the library and through
// the fabric-probe binary. Two nodes (vm.probe_rdma_2node, rdma_2node.sh): node 1 runs
// RdmaTwoNode.Agent, node 2 the RdmaTwoNode.Client* tests against node 1's address.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/subprocess.h"
#include "libs/agent_channel/tcp_socket.h"
#include "probes/agent/agent.h"
#include "probes/agent/protocol.h"
#include "probes/agent/session.h"
#include "probes/rdma/rdma_exchange.h"
#include "probes/rdma/rdma_link.h"
#include "probes/rdma/rdma_probe.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

bool in_lab() {
  return !env("FABRIC_LAB_ADDR").empty() && !env("FABRIC_LAB_RDMA_DEV").empty();
}

// The lab's address for node k (1-based), from FABRIC_LAB_ADDRS.
std::string lab_addr(int k) {
  std::string all = env("FABRIC_LAB_ADDRS");
  std::size_t start = 0;
  for (int i = 1; i < k; ++i) {
    start = all.find(' ', start);
    if (start == std::string::npos) return "";
    ++start;
  }
  return all.substr(start, all.find(' ', start) - start);
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return condition();
}

// An agent in this process, serving the RDMA tests on `port` (0: ephemeral).
class TestAgent {
public:
  explicit TestAgent(uint16_t port = 0) {
    AgentOptions options;
    options.port = port;
    agent_ = std::make_unique<Agent>(options);
    register_rdma_tests(*agent_);
    auto listening = agent_->listen();
    if (!listening.ok()) {
      error_ = listening.error().message();
      return;
    }
    thread_ = std::thread([this] { (void)agent_->serve(); });
  }
  ~TestAgent() {
    agent_->request_stop();
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return agent_->port(); }
  const std::string& error() const { return error_; }
  Agent& agent() { return *agent_; }

private:
  std::unique_ptr<Agent> agent_;
  std::thread thread_;
  std::string error_;
};

RdmaOptions base_options(RdmaTest test, const std::string& host, uint16_t port) {
  RdmaArgs args;
  args.host = host;
  args.port = std::to_string(port);
  auto o = make_rdma_options(test, args);
  EXPECT_TRUE(o.ok()) << o.error().message();
  RdmaOptions options = *o;
  options.timeout = 5s;
  return options;
}

uint64_t counter(const std::optional<CounterDelta>& d, const std::string& name) {
  if (!d) return 0;
  auto it = d->values.find(name);
  return it == d->values.end() ? 0 : it->second;
}

// Common checks of a bandwidth report: what a user reads off the table.
void expect_sane_bw(const RdmaBwReport& r, const RdmaOptions& o) {
  ASSERT_EQ(r.results.size(), o.sizes.size());
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    const BwSizeResult& s = r.results[i];
    EXPECT_EQ(s.size, o.sizes[i]);
    const uint64_t directions = o.bidir ? 2 : 1;
    if (o.iters != 0) {
      EXPECT_EQ(s.iterations, o.iters);
      EXPECT_EQ(s.messages(), o.iters * o.qps * directions) << "size " << s.size;
      EXPECT_EQ(s.bytes(), o.iters * o.qps * directions * s.size);
    }
    EXPECT_GT(s.seconds(), 0.0);
    EXPECT_GT(s.avg_bytes_per_s(), 0.0);
    EXPECT_GE(s.peak_bytes_per_s(), s.avg_bytes_per_s() * 0.999);
    EXPECT_GT(s.msg_rate_mpps(), 0.0);
    EXPECT_EQ(s.remote.has_value(), o.bidir);
  }
}

class RdmaVm : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (!in_lab()) return;
    agent_ = new TestAgent();
  }
  static void TearDownTestSuite() {
    delete agent_;
    agent_ = nullptr;
  }
  void SetUp() override {
    if (!in_lab()) GTEST_SKIP() << "not inside the soft-RoCE lab (run through scripts/lab.sh)";
    if (env("FABRIC_LAB_NODES") != "1") GTEST_SKIP() << "single-node tests";
    ASSERT_TRUE(agent_->error().empty()) << agent_->error();
    addr_ = env("FABRIC_LAB_ADDR");
    port_ = agent_->port();
  }
  RdmaOptions bw(std::function<void(RdmaOptions&)> tweak = {}) {
    RdmaOptions o = base_options(RdmaTest::kBandwidth, addr_, port_);
    o.iters = 200;
    if (tweak) tweak(o);
    return o;
  }
  RdmaOptions lat(std::function<void(RdmaOptions&)> tweak = {}) {
    RdmaOptions o = base_options(RdmaTest::kLatency, addr_, port_);
    // Few samples: a loaded host makes every soft-RoCE round trip a scheduler tick.
    o.iters = 100;
    if (tweak) tweak(o);
    return o;
  }
  Result<SubprocessResult> probe(std::vector<std::string> args) {
    args.insert(args.begin(), FABRIC_PROBE_BINARY);
    SubprocessOptions options;
    options.timeout = 60s;
    return run_subprocess(args, options);
  }

  static TestAgent* agent_;
  std::string addr_;
  uint16_t port_ = 0;
};
TestAgent* RdmaVm::agent_ = nullptr;

TEST_F(RdmaVm, WriteBandwidthOneSize) {
  RdmaOptions o = bw();
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message() << "\n" << r.error().hint();
  expect_sane_bw(*r, o);
  // The automatic GID choice: the RoCE v2 GID of this node's address, on both sides.
  const auto& c = r->connection;
  EXPECT_EQ(c.method, "oob");
  EXPECT_EQ(c.local.gid.gid, "::ffff:" + addr_);
  EXPECT_EQ(c.local.gid.type, rdma::GidType::kRoceV2);
  EXPECT_EQ(c.local.gid.netdev, env("FABRIC_LAB_NETDEV"));
  EXPECT_EQ(c.local.gid.gid_index, std::stoul(env("FABRIC_LAB_GID_INDEX")));
  EXPECT_EQ(c.remote.gid.gid, "::ffff:" + addr_);
  EXPECT_EQ(c.mtu, c.local.active_mtu);
  ASSERT_TRUE(r->link_speed_gbps.has_value());
  EXPECT_GT(*r->link_speed_gbps, 0.0);
}

TEST_F(RdmaVm, WriteSweepTwoQpsBothDirections) {
  RdmaOptions o = bw([](RdmaOptions& x) {
    x.sizes = {1024, 2048, 4096};
    x.qps = 2;
    x.bidir = true;
    x.iters = 100;
  });
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message() << "\n" << r.error().hint();
  expect_sane_bw(*r, o);
}

TEST_F(RdmaVm, ReadBandwidth) {
  RdmaOptions o = bw([](RdmaOptions& x) {
    x.op = RdmaOp::kRead;
    x.sizes = {2048, 65536};
    x.qps = 2;
  });
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message() << "\n" << r.error().hint();
  expect_sane_bw(*r, o);
}

TEST_F(RdmaVm, SendBandwidthSweepBothDirections) {
  RdmaOptions o = bw([](RdmaOptions& x) {
    x.op = RdmaOp::kSend;
    x.sizes = {64, 128, 256};
    x.qps = 2;
    x.bidir = true;
    x.iters = 300;
  });
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message() << "\n" << r.error().hint();
  expect_sane_bw(*r, o);
  // 64 bytes fit inline on rxe.
  EXPECT_GT(r->connection.max_inline, 64u);
}

TEST_F(RdmaVm, TimedSendRun) {
  RdmaOptions o = bw([](RdmaOptions& x) {
    x.op = RdmaOp::kSend;
    x.sizes = {4096};
    x.iters = 0;
    x.duration = 300ms;
  });
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message() << "\n" << r.error().hint();
  ASSERT_EQ(r->results.size(), 1u);
  EXPECT_GT(r->results[0].local.messages, 0u);
  EXPECT_EQ(r->results[0].iterations, r->results[0].local.messages);
  EXPECT_GT(r->results[0].seconds(), 0.0);
}

TEST_F(RdmaVm, LatencySendWriteRead) {
  for (RdmaOp op : {RdmaOp::kSend, RdmaOp::kWrite, RdmaOp::kRead}) {
    RdmaOptions o = lat([op](RdmaOptions& x) {
      x.op = op;
      x.sizes = {2, 4096};
    });
    auto r = run_rdma_lat(o);
    ASSERT_TRUE(r.ok()) << rdma_op_name(op) << ": " << r.error().message() << "\n"
                        << r.error().hint();
    ASSERT_EQ(r->results.size(), 2u);
    for (const auto& s : r->results) {
      const LatencySummary& l = s.summary;
      EXPECT_EQ(l.count, o.iters) << rdma_op_name(op);
      EXPECT_GT(l.min, 0.0);
      EXPECT_LE(l.min, l.p50);
      EXPECT_LE(l.p50, l.p99);
      EXPECT_LE(l.p99, l.p999);
      EXPECT_LE(l.p999, l.max);
      EXPECT_GE(l.mean, l.min);
    }
  }
}

TEST_F(RdmaVm, ConnectionManagerMode) {
  RdmaOptions o = bw([](RdmaOptions& x) {
    x.use_cm = true;
    x.qps = 2;
    x.op = RdmaOp::kSend;
    x.sizes = {4096, 8192};
  });
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message() << "\n" << r.error().hint();
  expect_sane_bw(*r, o);
  EXPECT_EQ(r->connection.method, "rdma_cm");
  // librdmacm resolves the address to the same RoCE v2 GID the automatic choice picks.
  EXPECT_EQ(r->connection.local.gid.gid, "::ffff:" + addr_);
  EXPECT_GE(r->connection.mtu, 256u);

  RdmaOptions l = lat([](RdmaOptions& x) { x.use_cm = true; });
  auto lr = run_rdma_lat(l);
  ASSERT_TRUE(lr.ok()) << lr.error().message() << "\n" << lr.error().hint();
  EXPECT_EQ(lr->results.at(0).summary.count, l.iters);
}

// One node: both ends count on rxe0, so each side's delta holds both directions' packets.
TEST_F(RdmaVm, CounterDeltasMatchTheBytesMoved) {
  RdmaOptions o = bw([](RdmaOptions& x) {
    x.sizes = {65536};
    x.iters = 300;
  });
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->counters.local.has_value());
  ASSERT_TRUE(r->counters.remote.has_value());
  const uint64_t data_packets = o.iters * (65536 / r->connection.mtu);
  for (const auto* d : {&r->counters.local, &r->counters.remote}) {
    uint64_t sent = counter(*d, "hw.sent_pkts");
    uint64_t received = counter(*d, "hw.rcvd_pkts");
    // Data packets plus at most one acknowledgement each, with room for retransmissions
    // on a loaded host (a quarter) and a little other traffic.
    const uint64_t most = 2 * data_packets + data_packets / 4 + 200;
    EXPECT_GE(sent, data_packets);
    EXPECT_LE(sent, most);
    EXPECT_GE(received, data_packets);
    EXPECT_LE(received, most);
    if (d->value().values.count("port.xmit_bytes")) {
      EXPECT_GE(counter(*d, "port.xmit_bytes"), r->results[0].bytes());
    }
  }
}

TEST_F(RdmaVm, ForcedLinkLocalGidIsRefused) {
  // Index 0 is rxe0's link-local fe80:: GID: not IPv4-mapped, unlike the agent's choice.
  RdmaOptions o = bw([](RdmaOptions& x) {
    x.gid_index = 0;
    x.device = env("FABRIC_LAB_RDMA_DEV");
  });
  auto r = run_rdma_bw(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(exit_status_for(r.error().code()), kExitSystem) << r.error().message();
  EXPECT_NE(r.error().message().find("GID choices disagree"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("IPv4-mapped"), std::string::npos) << r.error().message();

  auto cli = probe({"bw", addr_, "-p", std::to_string(port_), "--gid-index", "0", "-n", "10"});
  ASSERT_TRUE(cli.ok()) << cli.error().message();
  EXPECT_EQ(cli->exit_status, 2) << cli->stderr_text;
  EXPECT_NE(cli->stderr_text.find("GID choices disagree"), std::string::npos) << cli->stderr_text;
}

// rxe0's active MTU is 1024 (a 1500-byte netdev): a forced 4096 cannot work.
TEST_F(RdmaVm, MtuAboveThePortsIsRefused) {
  auto cli = probe({"bw", addr_, "-p", std::to_string(port_), "--mtu", "4096", "-n", "10"});
  ASSERT_TRUE(cli.ok()) << cli.error().message();
  EXPECT_EQ(cli->exit_status, 2) << cli->stderr_text;
  EXPECT_NE(cli->stderr_text.find("path MTU 4096: larger than the active MTU 1024"),
            std::string::npos)
      << cli->stderr_text;
  EXPECT_NE(cli->stderr_text.find("likely cause: MTU mismatch"), std::string::npos)
      << cli->stderr_text;

  // 512 fits both ports: used as asked.
  RdmaOptions o = bw([](RdmaOptions& x) { x.mtu = 512; });
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->connection.mtu, 512u);
}

TEST_F(RdmaVm, AgentRefusesAnotherProtocolVersion) {
  auto fd = connect_tcp(addr_, port_, 5s);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  Channel channel(std::move(*fd), "agent");
  // A client of protocol 1, from before the challenge-response.
  auto hello = make_hello(kRdmaBwTest, rdma_params_json(bw()), "", 1);
  ASSERT_TRUE(hello.ok());
  ASSERT_TRUE(channel.send(*hello).ok());
  auto answer = channel.receive(5s);
  ASSERT_TRUE(answer.ok()) << answer.error().message();
  EXPECT_EQ(message_type(*answer), "error");
  std::string text = (*answer)["message"].GetString();
  EXPECT_STREQ((*answer)["code"].GetString(), kErrorIncompatibleVersion);
  EXPECT_NE(text.find('2'), std::string::npos) << text;
  EXPECT_NE(text.find('1'), std::string::npos) << text;
}

// A listener that answers every hello with a welcome of protocol version 3.
TEST_F(RdmaVm, ClientRefusesAnAgentOfAnotherVersion) {
  auto listener = listen_tcp("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  auto port = bound_port(listener->get());
  ASSERT_TRUE(port.ok());
  std::thread fake([&] {
    int fd = ::accept(listener->get(), nullptr, nullptr);
    if (fd < 0) return;
    Channel c(UniqueFd(fd), "client");
    (void)c.receive(5s);
    (void)c.send(R"({"type":"welcome","version":3,"agent":"fabric-probe 9","hostname":"x"})");
    (void)c.receive(2s);
  });
  auto cli = probe({"bw", "127.0.0.1", "-p", std::to_string(*port), "-n", "10"});
  fake.join();
  ASSERT_TRUE(cli.ok()) << cli.error().message();
  // An agent of another version fails the probe like a missing one: exit 2.
  EXPECT_EQ(cli->exit_status, 2) << cli->stderr_text;
  EXPECT_NE(cli->stderr_text.find("protocol 3"), std::string::npos) << cli->stderr_text;
  EXPECT_NE(cli->stderr_text.find("upgrade one side"), std::string::npos) << cli->stderr_text;
}

TEST_F(RdmaVm, CommandLineReportsAndThresholds) {
  const std::string port = std::to_string(port_);
  auto text = probe({"bw", addr_, "-p", port, "-n", "100", "--sweep", "4K:8K"});
  ASSERT_TRUE(text.ok()) << text.error().message();
  ASSERT_EQ(text->exit_status, 0) << text->stderr_text;
  EXPECT_NE(text->stdout_text.find("#bytes"), std::string::npos) << text->stdout_text;
  EXPECT_NE(text->stdout_text.find("8192"), std::string::npos) << text->stdout_text;

  // Far above anything soft-RoCE reaches: the report is printed, the status is 3.
  auto floor = probe({"bw", addr_, "-p", port, "-n", "50", "--min-bw", "10000", "--json"});
  ASSERT_TRUE(floor.ok()) << floor.error().message();
  EXPECT_EQ(floor->exit_status, 3) << floor->stderr_text;
  auto doc = json::parse(floor->stdout_text, "bw --json");
  ASSERT_TRUE(doc.ok()) << doc.error().message() << "\n" << floor->stdout_text;
  EXPECT_EQ((*doc)["schema_version"].GetInt(), 1);
  EXPECT_FALSE((*doc)["threshold"]["passed"].GetBool());
  EXPECT_GT((*doc)["summary"]["avg_gbps"].GetDouble(), 0.0);
  EXPECT_NE(floor->stderr_text.find("below the required"), std::string::npos);

  auto pct = probe({"bw", addr_, "-p", port, "-n", "50", "--min-bw-pct", "100"});
  ASSERT_TRUE(pct.ok()) << pct.error().message();
  EXPECT_EQ(pct->exit_status, 3) << pct->stderr_text;

  auto latency = probe({"lat", addr_, "-p", port, "-n", "100", "--json"});
  ASSERT_TRUE(latency.ok()) << latency.error().message();
  ASSERT_EQ(latency->exit_status, 0) << latency->stderr_text;
  auto ldoc = json::parse(latency->stdout_text, "lat --json");
  ASSERT_TRUE(ldoc.ok()) << ldoc.error().message();
  EXPECT_GT((*ldoc)["summary"]["p50_us"].GetDouble(), 0.0);
  EXPECT_STREQ((*ldoc)["latency"].GetString(), "rtt/2");
}

TEST_F(RdmaVm, GpuBuffersWithoutAGpuExitFour) {
  auto r = probe({"bw", addr_, "-p", std::to_string(port_), "--gpu", "0", "-n", "10"});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_status, 4) << r->stderr_text;
  EXPECT_TRUE(r->stderr_text.find("no CUDA device") != std::string::npos ||
              r->stderr_text.find("no CUDA runtime") != std::string::npos)
      << r->stderr_text;
}

// The agent's side disappears in the middle of a run: the client must fail within its
// timeout, saying why, instead of hanging.
TEST_F(RdmaVm, PeerThatVanishesMidRunDoesNotHangTheClient) {
  auto pair = make_channel_pair();
  ASSERT_TRUE(pair.ok());
  RdmaOptions o = bw([](RdmaOptions& x) {
    x.sizes = {65536};
    x.iters = 1000000; // far more than can finish before the peer goes
    x.timeout = 3s;
  });
  std::thread server([&] {
    auto params = json::parse(rdma_params_json(o), "params");
    ASSERT_TRUE(params.ok());
    auto link = accept_server_link(pair->first, o);
    ASSERT_TRUE(link.ok()) << link.error().message();
    auto run = pair->first.receive(5s);
    ASSERT_TRUE(run.ok());
    ASSERT_TRUE(pair->first.send(encode_simple(kMsgReady)).ok());
    std::this_thread::sleep_for(200ms); // let traffic flow, then vanish
    link->reset();                      // destroys the QPs and deregisters the buffer
  });
  RdmaAgentInfo agent{"socketpair", "here", "test"};
  auto r = run_rdma_bw_client(pair->second, o, agent);
  server.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(exit_status_for(r.error().code()), kExitSystem);
  const std::string m = r.error().message() + " " + r.error().hint();
  EXPECT_TRUE(m.find("retry counter exceeded") != std::string::npos ||
              m.find("no completion") != std::string::npos ||
              m.find("remote access error") != std::string::npos)
      << m;
}

// rxe's count of packets received; 0 when unreadable.
uint64_t received_packets() {
  std::ifstream in("/sys/class/infiniband/" + env("FABRIC_LAB_RDMA_DEV") +
                   "/ports/1/hw_counters/rcvd_pkts");
  uint64_t v = 0;
  in >> v;
  return v;
}

// The agent's data loops watch no socket. When the agent stops, a run set for ten minutes
// must end once stop_grace has passed and the agent cut the session, not at its duration.
TEST_F(RdmaVm, StoppingTheAgentCutsALongRun) {
  AgentOptions options;
  options.stop_grace = 1s;
  Agent agent(options);
  register_rdma_tests(agent);
  ASSERT_TRUE(agent.listen().ok());
  std::atomic<bool> served{false};
  std::thread serving([&] {
    (void)agent.serve();
    served = true;
  });
  RdmaOptions o = base_options(RdmaTest::kBandwidth, addr_, agent.port());
  o.op = RdmaOp::kSend; // the agent receives: it is in its busy loop for the whole run
  o.iters = 0;
  o.duration = 600s;
  std::thread client([&] { (void)run_rdma_bw(o); });
  const uint64_t before = received_packets();
  const bool flowing = wait_until([&] { return received_packets() > before + 1000; }, 60s);
  agent.request_stop();
  const bool stopped = wait_until([&] { return served.load(); }, 120s);
  serving.join();
  client.join(); // its QPs lost their peer: the client fails within its own timeout
  ASSERT_TRUE(flowing) << "no traffic reached the agent";
  EXPECT_TRUE(stopped) << "the agent waited for the run instead of cutting it";
}

// --- two nodes ---------------------------------------------------------------------------

constexpr uint16_t kTwoNodePort = 18515;

std::string shared_file(const char* name) {
  return env("FABRIC_LAB_SHARED") + "/rdma_vm_" + name;
}

class RdmaTwoNode : public ::testing::Test {
protected:
  void SetUp() override {
    if (!in_lab() || env("FABRIC_LAB_NODES") != "2") GTEST_SKIP() << "needs the 2-node lab";
  }
};

// Node 1: serves until node 2 says it is done (bounded).
TEST_F(RdmaTwoNode, Agent) {
  if (env("FABRIC_LAB_NODE") != "1") GTEST_SKIP() << "node 1 only";
  TestAgent agent(kTwoNodePort);
  ASSERT_TRUE(agent.error().empty()) << agent.error();
  std::ofstream(shared_file("agent_ready")) << agent.port() << "\n";
  EXPECT_TRUE(wait_until([] { return std::filesystem::exists(shared_file("client_done")); }, 240s))
      << "node 2 never finished";
}

class RdmaTwoNodeClient : public RdmaTwoNode {
protected:
  void SetUp() override {
    RdmaTwoNode::SetUp();
    if (IsSkipped()) return;
    if (env("FABRIC_LAB_NODE") != "2") GTEST_SKIP() << "node 2 only";
    ASSERT_TRUE(
        wait_until([] { return std::filesystem::exists(shared_file("agent_ready")); }, 60s));
    peer_ = lab_addr(1);
    ASSERT_FALSE(peer_.empty());
  }
  static void TearDownTestSuite() {
    if (env("FABRIC_LAB_NODE") == "2") std::ofstream(shared_file("client_done")) << "done\n";
  }
  std::string peer_;
};

TEST_F(RdmaTwoNodeClient, WriteCountersOnBothEnds) {
  RdmaOptions o = base_options(RdmaTest::kBandwidth, peer_, kTwoNodePort);
  o.iters = 300;
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message() << "\n" << r.error().hint();
  expect_sane_bw(*r, o);
  EXPECT_EQ(r->connection.local.gid.gid, "::ffff:" + env("FABRIC_LAB_ADDR"));
  EXPECT_EQ(r->connection.remote.gid.gid, "::ffff:" + peer_);
  ASSERT_TRUE(r->counters.local && r->counters.remote);
  const uint64_t data_packets = o.iters * (65536 / r->connection.mtu);
  // This side sends the data, the agent's side acknowledges it.
  // With room for retransmissions (a quarter) and a little other traffic.
  const uint64_t most = data_packets + data_packets / 4 + 100;
  EXPECT_GE(counter(r->counters.local, "hw.sent_pkts"), data_packets);
  EXPECT_LE(counter(r->counters.local, "hw.sent_pkts"), most);
  EXPECT_GE(counter(r->counters.remote, "hw.rcvd_pkts"), data_packets);
  EXPECT_LE(counter(r->counters.remote, "hw.rcvd_pkts"), most);
  EXPECT_LE(counter(r->counters.remote, "hw.sent_pkts"), most);
  // The report states the bytes: 300 x 64 KiB.
  EXPECT_EQ(r->results[0].bytes(), 300u * 65536);
}

TEST_F(RdmaTwoNodeClient, SendBothDirectionsTwoQps) {
  RdmaOptions o = base_options(RdmaTest::kBandwidth, peer_, kTwoNodePort);
  o.op = RdmaOp::kSend;
  o.sizes = {1024, 4096};
  o.qps = 2;
  o.bidir = true;
  o.iters = 200;
  auto r = run_rdma_bw(o);
  ASSERT_TRUE(r.ok()) << r.error().message() << "\n" << r.error().hint();
  expect_sane_bw(*r, o);
}

TEST_F(RdmaTwoNodeClient, LatencyAndConnectionManager) {
  RdmaOptions o = base_options(RdmaTest::kLatency, peer_, kTwoNodePort);
  o.iters = 100;
  for (bool cm : {false, true}) {
    o.use_cm = cm;
    auto r = run_rdma_lat(o);
    ASSERT_TRUE(r.ok()) << (cm ? "cm: " : "") << r.error().message() << "\n" << r.error().hint();
    EXPECT_EQ(r->results.at(0).summary.count, o.iters);
    EXPECT_EQ(r->connection.remote.gid.gid, "::ffff:" + peer_);
  }
}

TEST_F(RdmaTwoNodeClient, CommandLine) {
  SubprocessOptions so;
  so.timeout = 60s;
  auto r =
      run_subprocess({FABRIC_PROBE_BINARY, "bw", peer_, "--op", "read", "-n", "100", "--json"}, so);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->exit_status, 0) << r->stderr_text;
  auto doc = json::parse(r->stdout_text, "bw --json");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_STREQ((*doc)["connection"]["remote"]["ipv4"].GetString(), peer_.c_str());
}

} // namespace
} // namespace fabric::probes
