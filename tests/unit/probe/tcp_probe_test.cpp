// The TCP probes against real agents in this process, over 127.0.0.1: byte counts that
// agree on both ends, latency summaries, "run" delegation from one agent to another, and
// an agent that outlives a client vanishing in the middle of a bandwidth test.
#include <sys/socket.h>

#include <functional>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "common/json.h"
#include "libs/agent_channel/tcp_socket.h"
#include "probes/agent/agent.h"
#include "probes/agent/session.h"
#include "probes/tcp/tcp_test.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit = 10s) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

// An agent serving the TCP tests on 127.0.0.1, stopped and joined on destruction.
class RunningAgent {
public:
  explicit RunningAgent(std::string hostname) {
    AgentOptions options;
    options.bind_address = "127.0.0.1";
    options.port = 0;
    options.hostname = std::move(hostname);
    agent_ = std::make_unique<Agent>(options);
    register_tcp_tests(*agent_);
    auto listening = agent_->listen();
    EXPECT_TRUE(listening.ok()) << listening.error().message();
    thread_ = std::thread([this] { (void)agent_->serve(); });
  }
  ~RunningAgent() {
    agent_->request_stop();
    thread_.join();
  }
  Agent& operator*() { return *agent_; }
  Agent* operator->() { return agent_.get(); }
  uint16_t port() const { return agent_->port(); }

private:
  std::unique_ptr<Agent> agent_;
  std::thread thread_;
};

TcpBwOptions bytes_options(TcpDirection direction, std::size_t streams, uint64_t bytes) {
  TcpBwOptions o;
  o.direction = direction;
  o.streams = streams;
  o.bytes = bytes;
  o.write_size = 64 * 1024;
  return o;
}

TEST(TcpProbe, BandwidthCountsAgreeInEveryDirection) {
  RunningAgent agent("agent-a");
  const uint64_t total = 8 * 1024 * 1024;
  struct Case {
    TcpDirection direction;
    std::vector<std::string> names;
  } cases[] = {
      {TcpDirection::kForward, {"client_to_agent"}},
      {TcpDirection::kReverse, {"agent_to_client"}},
      {TcpDirection::kBidir, {"client_to_agent", "agent_to_client"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(tcp_direction_name(c.direction)));
    auto report = run_tcp_bw("127.0.0.1", agent.port(), bytes_options(c.direction, 2, total));
    ASSERT_TRUE(report.ok()) << report.error().message();
    ASSERT_EQ(report->directions.size(), c.names.size());
    for (std::size_t i = 0; i < c.names.size(); ++i) {
      const auto& d = report->directions[i];
      EXPECT_EQ(d.name, c.names[i]);
      EXPECT_EQ(d.sender.bytes, total);
      EXPECT_EQ(d.receiver.bytes, total);
      EXPECT_GT(d.receiver.seconds, 0);
      ASSERT_EQ(d.receiver_streams.size(), 2u);
      EXPECT_EQ(d.receiver_streams[0].bytes + d.receiver_streams[1].bytes, total);
    }
    EXPECT_GT(report->avg_gbps(), 0);
    EXPECT_EQ(report->agent.hostname, "agent-a");
  }
}

TEST(TcpProbe, BandwidthForADurationReportsWhatArrived) {
  RunningAgent agent("agent-a");
  TcpBwOptions o;
  o.duration = 200ms;
  auto report = run_tcp_bw("127.0.0.1", agent.port(), o);
  ASSERT_TRUE(report.ok()) << report.error().message();
  ASSERT_EQ(report->directions.size(), 1u);
  const auto& d = report->directions[0];
  EXPECT_GT(d.receiver.bytes, 0u);
  EXPECT_EQ(d.receiver.bytes, d.sender.bytes);

  auto doc = json::parse(render_tcp_bw_json(*report), "report");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ((*doc)["schema_version"].GetInt(), 1);
  EXPECT_STREQ((*doc)["test"].GetString(), "tcp_bw");
  EXPECT_DOUBLE_EQ((*doc)["summary"]["avg_gbps"].GetDouble(), report->avg_gbps());
  EXPECT_EQ((*doc)["directions"][0]["receiver"]["bytes"].GetUint64(), d.receiver.bytes);
  EXPECT_NE(render_tcp_bw_text(*report).find("client -> agent"), std::string::npos);
}

TEST(TcpProbe, IntervalsFollowEachOtherAndAddUpToWhatWasSent) {
  RunningAgent agent("agent-a");
  TcpBwOptions o;
  o.duration = 400ms;
  std::mutex mutex;
  std::vector<TcpInterval> seen;
  TcpIntervalReporting intervals;
  intervals.period = 100ms;
  intervals.report = [&](const TcpInterval& interval) {
    std::lock_guard lock(mutex);
    seen.push_back(interval);
  };
  auto report = run_tcp_bw("127.0.0.1", agent.port(), o, nullptr, intervals);
  ASSERT_TRUE(report.ok()) << report.error().message();
  ASSERT_GE(seen.size(), 2u);
  uint64_t bytes = 0;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (i > 0) {
      EXPECT_DOUBLE_EQ(seen[i].start_s, seen[i - 1].end_s);
    }
    EXPECT_GT(seen[i].end_s, seen[i].start_s);
    bytes += seen[i].bytes;
  }
  EXPECT_EQ(seen.front().start_s, 0.0);
  EXPECT_EQ(bytes, report->directions[0].sender.bytes);

  TcpInterval one{2.0, 3.0, 1'250'000'000};
  EXPECT_EQ(render_tcp_interval_text(one), "[   2.0-   3.0 s]     1.16 GiB  10.000 Gb/s\n");
}

TEST(TcpProbe, LatencySummaryIsOrdered) {
  RunningAgent agent("agent-a");
  TcpLatOptions o;
  o.iters = 300;
  o.warmup = 10;
  o.size = 64;
  auto report = run_tcp_lat("127.0.0.1", agent.port(), o);
  ASSERT_TRUE(report.ok()) << report.error().message();
  const LatencySummary& s = report->summary;
  EXPECT_EQ(s.count, 300u);
  EXPECT_GT(s.min, 0);
  EXPECT_LE(s.min, s.p50);
  EXPECT_LE(s.p50, s.p99);
  EXPECT_LE(s.p99, s.p999);
  EXPECT_LE(s.p999, s.max);

  auto doc = json::parse(render_tcp_lat_json(*report), "report");
  ASSERT_TRUE(doc.ok());
  EXPECT_STREQ((*doc)["test"].GetString(), "tcp_lat");
  EXPECT_DOUBLE_EQ((*doc)["summary"]["p50_us"].GetDouble(), s.p50);
  EXPECT_EQ((*doc)["params"]["size_bytes"].GetUint64(), 64u);
}

TEST(TcpProbe, OptionsRoundTripThroughParamsAndAreChecked) {
  TcpBwOptions o;
  o.streams = 3;
  o.write_size = 4096;
  o.duration = 1500ms;
  o.direction = TcpDirection::kBidir;
  auto doc = json::parse(to_params_json(o), "params");
  ASSERT_TRUE(doc.ok());
  auto back = tcp_bw_options_from_json(*doc);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->streams, 3u);
  EXPECT_EQ(back->write_size, 4096u);
  EXPECT_EQ(back->duration, 1500ms);
  EXPECT_EQ(back->direction, TcpDirection::kBidir);

  for (const char* bad : {R"({"streams":0})", R"({"streams":1000})", R"({"direction":"up"})",
                          R"({"write_size_bytes":-1})", R"({"duration_s":"ten"})",
                          R"({"duration_s":-1e308,"total_bytes":1})", R"({"duration_s":-1})"}) {
    auto parsed = json::parse(bad, "params");
    ASSERT_TRUE(parsed.ok());
    EXPECT_FALSE(tcp_bw_options_from_json(*parsed).ok()) << bad;
  }
  TcpLatOptions lat;
  lat.size = 0;
  EXPECT_EQ(validate(lat).error().message().rfind("--size", 0), 0u);
}

TEST(TcpProbe, AgentRunsTheClientSideForAnotherHost) {
  RunningAgent source("agent-src");
  RunningAgent destination("agent-dst");
  std::string params = R"({"test":"tcp_lat","peer":"127.0.0.1:)" +
                       std::to_string(destination.port()) + R"(","params":{"iters":50}})";
  auto session = connect_session("127.0.0.1", source.port(), "run", params, 5s);
  ASSERT_TRUE(session.ok()) << session.error().message();
  auto result = session->channel.receive(30s);
  ASSERT_TRUE(result.ok()) << result.error().message();
  ASSERT_STREQ((*result)["type"].GetString(), "result");
  const auto& report = (*result)["report"];
  EXPECT_STREQ(report["test"].GetString(), "tcp_lat");
  // The report is the one the source's client wrote about the destination's agent.
  EXPECT_STREQ(report["agent_hostname"].GetString(), "agent-dst");
  EXPECT_EQ(report["summary"]["count"].GetUint64(), 50u);
  EXPECT_GT(report["summary"]["p50_us"].GetDouble(), 0);
}

TEST(TcpProbe, RunForATestWithoutClientIsRefused) {
  RunningAgent source("agent-src");
  auto session = connect_session("127.0.0.1", source.port(), "run",
                                 R"({"test":"rdma_teleport","peer":"127.0.0.1:1"})", 5s);
  ASSERT_TRUE(session.ok()) << session.error().message();
  auto result = session->channel.receive(5s);
  ASSERT_TRUE(result.ok());
  Error e = error_from_message(*result, "agent");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(e.message().find("cannot run test 'rdma_teleport' (it runs: tcp_bw, tcp_lat)"),
            std::string::npos)
      << e.message();
}

// Only an agent that completes the handshake is a target: a closed port gets the same
// refusal as any other non-agent (tests/netns/probe/delegation_netns_test.cpp).
TEST(TcpProbe, RunToAMissingPeerIsRefusedWithoutSayingWhatIsThere) {
  RunningAgent source("agent-src");
  auto session = connect_session("127.0.0.1", source.port(), "run",
                                 R"({"test":"tcp_bw","peer":"127.0.0.1:1"})", 5s);
  ASSERT_TRUE(session.ok()) << session.error().message();
  auto result = session->channel.receive(10s);
  ASSERT_TRUE(result.ok());
  Error e = error_from_message(*result, "agent");
  EXPECT_EQ(e.code(), ErrorCode::kPermission);
  EXPECT_NE(e.message().find("none completed a handshake at 127.0.0.1:1 "), std::string::npos)
      << e.message();
  EXPECT_EQ(e.message().find("refused"), std::string::npos) << e.message();
}

// A client that opens a bandwidth test, sends a little and disappears: the agent's
// session ends with an error while a concurrent test completes and new ones succeed.
TEST(TcpProbe, ClientVanishingMidBandwidthTestHurtsNoOtherSession) {
  RunningAgent agent("agent-a");
  TcpBwOptions long_test;
  long_test.duration = 30s;
  {
    auto session =
        connect_session("127.0.0.1", agent.port(), kTcpBwTest, to_params_json(long_test), 5s);
    ASSERT_TRUE(session.ok()) << session.error().message();
    auto announce = session->channel.receive(5s);
    ASSERT_TRUE(announce.ok());
    auto data =
        open_data_connection("127.0.0.1", agent.port(), (*announce)["cookie"].GetString(), 0, 5s);
    ASSERT_TRUE(data.ok()) << data.error().message();
    auto start = session->channel.receive(5s);
    ASSERT_TRUE(start.ok());
    ASSERT_STREQ((*start)["type"].GetString(), "start");

    std::thread other([&] {
      auto report =
          run_tcp_bw("127.0.0.1", agent.port(), bytes_options(TcpDirection::kForward, 1, 4 << 20));
      EXPECT_TRUE(report.ok()) << report.error().message();
    });
    std::vector<char> chunk(1 << 20, 'x');
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(::send(data->get(), chunk.data(), chunk.size(), MSG_NOSIGNAL),
                ssize_t(chunk.size()));
    other.join();
    // Leaving the scope closes the data and control connections mid-test.
  }
  ASSERT_TRUE(wait_until([&] { return agent->counters().sessions_failed == 1; }))
      << "the agent did not notice the vanished client";
  EXPECT_EQ(agent->active_sessions(), 0u);
  auto again =
      run_tcp_bw("127.0.0.1", agent.port(), bytes_options(TcpDirection::kReverse, 1, 1 << 20));
  ASSERT_TRUE(again.ok()) << again.error().message();
}

TEST(TcpProbe, DataConnectionWithAStaleCookieIsRefused) {
  RunningAgent agent("agent-a");
  auto data = open_data_connection("127.0.0.1", agent.port(), "0123456789abcdef", 0, 5s);
  ASSERT_TRUE(data.ok()) << data.error().message();
  ASSERT_TRUE(set_io_timeout(data->get(), 5s).ok());
  char byte;
  // The agent closes it: nothing to read but the end (or a reset).
  EXPECT_LE(::recv(data->get(), &byte, 1, 0), 0);
  EXPECT_EQ(agent->counters().streams_attached, 0u);
}

} // namespace
} // namespace fabric::probes
