// The agent in-process on 127.0.0.1, an ephemeral port: sessions one after another and at
// the same time, the session cap, clients that vanish or say nothing, refusals, stopping.
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "common/json.h"
#include "libs/agent_channel/auth.h"
#include "libs/agent_channel/framing.h"
#include "libs/agent_channel/tcp_socket.h"
#include "probes/agent/agent.h"
#include "probes/agent/agent_access.h"
#include "probes/agent/session.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Polls `condition` every 10 ms for at most `limit`.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit = 5s) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

// Echoes {"type":"ping","n":N} as {"type":"pong","n":N} until "bye", then sends a result.
Result<void> echo_handler(Channel& channel, const rapidjson::Value&) {
  for (int count = 0;; ++count) {
    FABRIC_ASSIGN_OR_RETURN(rapidjson::Document message, channel.receive(5s));
    if (message_type(message) == "bye") {
      return channel.send(R"({"type":"result","pings":)" + std::to_string(count) + "}");
    }
    FABRIC_TRY(
        channel.send(R"({"type":"pong","n":)" + std::to_string(message["n"].GetInt()) + "}"));
  }
}

class AgentTest : public ::testing::Test {
protected:
  void start(AgentOptions options = {}) {
    options.bind_address = "127.0.0.1";
    options.port = 0;
    agent_ = std::make_unique<Agent>(options);
    agent_->register_test("echo", echo_handler);
    agent_->register_test("hold", [this](Channel& channel, const rapidjson::Value&) {
      // Holds the session until the client says "release" (or 10 s pass).
      ++held_;
      auto released = channel.receive(10s);
      --held_;
      if (!released.ok()) return Result<void>(std::move(released).error());
      return channel.send(R"({"type":"result"})");
    });
    // Echoes, at the cost its params declare: what the bw/lat/tcp estimates work out.
    agent_->register_test("costly", echo_handler, [](const rapidjson::Value& params) {
      SessionDemand demand;
      demand.message_bytes = params["message_bytes"].GetUint64();
      demand.memory_bytes = params["memory_bytes"].GetUint64();
      if (params.HasMember("seconds"))
        demand.duration = std::chrono::seconds(params["seconds"].GetInt());
      return Result<SessionDemand>(demand);
    });
    agent_->register_test("fails", [](Channel&, const rapidjson::Value&) -> Result<void> {
      return Error(ErrorCode::kUnsupported, "opening rxe0", "no such device");
    });
    auto listening = agent_->listen();
    ASSERT_TRUE(listening.ok()) << listening.error().message();
    serving_ = std::thread([this] { served_ = agent_->serve(); });
  }

  void stop() {
    agent_->request_stop();
    serving_.join();
    EXPECT_TRUE(served_.ok()) << served_.error().message();
  }

  void TearDown() override {
    if (serving_.joinable()) stop();
  }

  Result<Channel> open(const char* test, std::chrono::milliseconds timeout = 5s) {
    return open_session("127.0.0.1", agent_->port(), test, "{}", timeout);
  }

  // A full echo session: three pings and a bye.
  void echo_session() {
    auto channel = open("echo");
    ASSERT_TRUE(channel.ok()) << channel.error().message();
    for (int n = 0; n < 3; ++n) {
      ASSERT_TRUE(channel->send(R"({"type":"ping","n":)" + std::to_string(n) + "}").ok());
      auto pong = channel->receive(5s);
      ASSERT_TRUE(pong.ok()) << pong.error().message();
      EXPECT_EQ((*pong)["n"].GetInt(), n);
    }
    ASSERT_TRUE(channel->send(R"({"type":"bye"})").ok());
    auto result = channel->receive(5s);
    ASSERT_TRUE(result.ok()) << result.error().message();
    EXPECT_EQ((*result)["pings"].GetInt(), 3);
  }

  // Connects without the protocol: a stranger on the port.
  UniqueFd raw_connect() {
    auto fd = connect_tcp("127.0.0.1", agent_->port(), 5s);
    EXPECT_TRUE(fd.ok()) << fd.error().message();
    return fd.ok() ? std::move(*fd) : UniqueFd();
  }

  std::unique_ptr<Agent> agent_;
  std::thread serving_;
  Result<void> served_ = Ok();
  std::atomic<int> held_{0};
};

TEST_F(AgentTest, ServesSessionsOneAfterAnother) {
  start();
  for (int i = 0; i < 5; ++i)
    echo_session();
  ASSERT_TRUE(wait_until([&] { return agent_->counters().sessions_ok == 5; }));
  EXPECT_EQ(agent_->counters().sessions_failed, 0u);
}

TEST_F(AgentTest, ServesSessionsAtTheSameTime) {
  AgentOptions options;
  options.limits.max_sessions = 8; // all from 127.0.0.1: one client
  start(options);
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i)
    clients.emplace_back([this] { echo_session(); });
  for (auto& c : clients)
    c.join();
  ASSERT_TRUE(wait_until([&] { return agent_->counters().sessions_ok == 8; }));
}

TEST_F(AgentTest, WelcomeNamesTheAgent) {
  AgentOptions options;
  options.hostname = "node-under-test";
  start(options);
  auto session = connect_session("127.0.0.1", agent_->port(), "echo", "{}", 5s);
  ASSERT_TRUE(session.ok()) << session.error().message();
  EXPECT_EQ(session->welcome.hostname, "node-under-test");
  EXPECT_EQ(session->welcome.agent.rfind("fabric-probe ", 0), 0u) << session->welcome.agent;
  EXPECT_EQ(session->agent, "127.0.0.1:" + std::to_string(agent_->port()));
}

TEST_F(AgentTest, HostNamesResolveAndEveryAddressIsTried) {
  start(); // listens on 127.0.0.1 only: where localhost is also ::1, that one is refused
  auto session = connect_session("localhost", agent_->port(), "echo", "{}", 5s);
  ASSERT_TRUE(session.ok()) << session.error().message();
  EXPECT_EQ(session->agent, "localhost:" + std::to_string(agent_->port()));
}

TEST_F(AgentTest, ClientsBeyondTheCapAreToldBusy) {
  AgentOptions options;
  options.max_sessions = 2;
  start(options);
  auto first = open("hold");
  auto second = open("hold");
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_TRUE(second.ok()) << second.error().message();
  ASSERT_TRUE(wait_until([&] { return held_ == 2; }));

  auto third = open("echo");
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code(), ErrorCode::kTryAgain);
  EXPECT_NE(third.error().message().find("is busy: 2 sessions running (--max-sessions 2)"),
            std::string::npos)
      << third.error().message();
  EXPECT_TRUE(wait_until([&] { return agent_->counters().refused_busy == 1; }));

  // A finished session frees its slot.
  ASSERT_TRUE(first->send(R"({"type":"release"})").ok());
  ASSERT_TRUE(first->receive(5s).ok());
  ASSERT_TRUE(wait_until([&] { return agent_->active_sessions() == 1; }));
  echo_session();
  ASSERT_TRUE(second->send(R"({"type":"release"})").ok());
}

TEST_F(AgentTest, ClientVanishingMidTestEndsOnlyItsSession) {
  start();
  auto steady = open("echo");
  ASSERT_TRUE(steady.ok()) << steady.error().message();
  ASSERT_TRUE(steady->send(R"({"type":"ping","n":1})").ok());
  ASSERT_TRUE(steady->receive(5s).ok());

  {
    auto vanishing = open("echo");
    ASSERT_TRUE(vanishing.ok()) << vanishing.error().message();
    ASSERT_TRUE(vanishing->send(R"({"type":"ping","n":7})").ok());
    ASSERT_TRUE(vanishing->receive(5s).ok());
    // Leaves without "bye": the channel's socket closes here.
  }
  ASSERT_TRUE(wait_until([&] { return agent_->counters().sessions_failed == 1; }));

  // The other session and new ones carry on.
  ASSERT_TRUE(steady->send(R"({"type":"ping","n":2})").ok());
  auto pong = steady->receive(5s);
  ASSERT_TRUE(pong.ok()) << pong.error().message();
  EXPECT_EQ((*pong)["n"].GetInt(), 2);
  ASSERT_TRUE(steady->send(R"({"type":"bye"})").ok());
  ASSERT_TRUE(steady->receive(5s).ok());
  echo_session();
}

TEST_F(AgentTest, SilentClientIsDroppedAfterTheHandshakeTimeout) {
  AgentOptions options;
  options.handshake_timeout = 200ms;
  start(options);
  UniqueFd silent = raw_connect();
  ASSERT_TRUE(silent.valid());
  pollfd p{silent.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the agent kept a silent client";
  char byte;
  EXPECT_EQ(::recv(silent.get(), &byte, 1, 0), 0);
  EXPECT_TRUE(wait_until([&] { return agent_->counters().handshake_timeouts == 1; }));
  echo_session();
}

TEST_F(AgentTest, SilentClientsCostNoSessionSlot) {
  AgentOptions options;
  options.max_sessions = 1;
  start(options);
  UniqueFd silent1 = raw_connect(), silent2 = raw_connect();
  echo_session();
}

TEST_F(AgentTest, ThreeHundredSilentConnectionsGetAReasonNotAReset) {
  start();
  std::vector<UniqueFd> silent;
  for (int i = 0; i < 300; ++i)
    silent.push_back(raw_connect());
  // The agent holds 256 handshakes; every one after that is told why it is turned away.
  ASSERT_TRUE(wait_until([&] { return agent_->counters().refused_busy == 44; }))
      << agent_->counters().refused_busy;
  Channel last(std::move(silent.back()), "agent");
  auto told = last.receive(5s);
  ASSERT_TRUE(told.ok()) << told.error().message();
  EXPECT_STREQ((*told)["type"].GetString(), "error");
  EXPECT_STREQ((*told)["code"].GetString(), "busy");
  EXPECT_NE(std::string((*told)["message"].GetString()).find("still introducing themselves"),
            std::string::npos);
}

// Out of descriptors, accept() fails while the connections stay queued: the agent rests
// between tries, and says so once, where it used to spin and log every failure.
TEST_F(AgentTest, OutOfDescriptorsTheAgentRestsAndWarnsOnce) {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "agent-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  spdlog::set_default_logger(logger);
  start();
  // The clients' sockets exist before the limit falls (connect() needs no descriptor).
  std::vector<UniqueFd> waiting;
  for (int i = 0; i < 8; ++i)
    waiting.emplace_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  const auto open_now = static_cast<rlim_t>(std::distance(
      std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator()));
  rlimit exhausted = before;
  exhausted.rlim_cur = open_now;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &exhausted), 0);
  // Every free number below the limit taken too: the agent's next accept() has none.
  std::vector<UniqueFd> fillers;
  for (int i = 0; i < 4096; ++i) {
    UniqueFd filler(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!filler) break;
    fillers.push_back(std::move(filler));
  }
  sockaddr_in agent{};
  agent.sin_family = AF_INET;
  agent.sin_port = htons(agent_->port());
  agent.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (const UniqueFd& fd : waiting) {
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&agent), sizeof agent), 0)
        << std::strerror(errno);
  }
  const bool failed_often =
      wait_until([&] { return agent_->counters().accept_failures >= 5; }, 10s);
  fillers.clear();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
  spdlog::set_default_logger(previous);
  ASSERT_TRUE(failed_often) << agent_->counters().accept_failures;
  std::size_t warnings = 0;
  for (std::size_t at = log.str().find("accept: "); at != std::string::npos;
       at = log.str().find("accept: ", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << log.str();
  // With descriptors again, the queued connections are taken and a client is served.
  waiting.clear();
  echo_session();
}

TEST_F(AgentTest, RefusesAnotherProtocolVersionNamingBoth) {
  start();
  UniqueFd fd = raw_connect();
  // A client of protocol 1, from before the challenge-response.
  auto hello = make_hello("echo", "{}", "", 1);
  ASSERT_TRUE(hello.ok());
  ASSERT_TRUE(send_frame(fd.get(), *hello, 5s).ok());
  Channel channel(std::move(fd), "agent");
  auto answer = channel.receive(5s);
  ASSERT_TRUE(answer.ok()) << answer.error().message();
  EXPECT_STREQ((*answer)["type"].GetString(), "error");
  EXPECT_STREQ((*answer)["code"].GetString(), "incompatible_version");
  EXPECT_EQ((*answer)["version"].GetInt(), kProtocolVersion);
  EXPECT_NE(std::string((*answer)["message"].GetString())
                .find("the client speaks fabric-probe protocol 1, this agent speaks 2"),
            std::string::npos);
  EXPECT_TRUE(wait_until([&] { return agent_->counters().refused_other == 1; }));
}

TEST_F(AgentTest, AnswersAnHttpClientWithAnErrorAndCarriesOn) {
  start();
  UniqueFd fd = raw_connect();
  const char request[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd.get(), request, sizeof request - 1, 0), ssize_t(sizeof request - 1));
  Channel channel(std::move(fd), "agent");
  auto answer = channel.receive(5s);
  ASSERT_TRUE(answer.ok()) << answer.error().message();
  EXPECT_STREQ((*answer)["code"].GetString(), "bad_request");
  EXPECT_NE(std::string((*answer)["message"].GetString()).find("not a fabric-probe client"),
            std::string::npos);
  echo_session();
}

TEST_F(AgentTest, UnknownTestIsRefusedListingTheTests) {
  start();
  auto channel = open("rdma_teleport");
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(channel.error().message().find("no test 'rdma_teleport'"), std::string::npos);
  EXPECT_NE(channel.error().message().find("echo"), std::string::npos) << channel.error().message();
}

TEST_F(AgentTest, HandlerErrorsReachTheClient) {
  start();
  auto channel = open("fails");
  ASSERT_TRUE(channel.ok()) << channel.error().message();
  auto answer = channel->receive(5s);
  ASSERT_TRUE(answer.ok());
  Error e = error_from_message(*answer, "agent");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(e.message().find("opening rxe0: no such device"), std::string::npos);
}

TEST_F(AgentTest, StopEndsIdleAgentAndRefusesNewClients) {
  start();
  uint16_t port = agent_->port();
  stop();
  auto channel = open_session("127.0.0.1", port, "echo", "{}", 2s);
  ASSERT_FALSE(channel.ok());
  EXPECT_NE(channel.error().message().find("no fabric-probe agent listening on 127.0.0.1:" +
                                           std::to_string(port)),
            std::string::npos)
      << channel.error().message();
}

TEST_F(AgentTest, StopCutsSessionsThatOutliveTheGrace) {
  AgentOptions options;
  options.stop_grace = 100ms;
  start(options);
  auto held = open("hold");
  ASSERT_TRUE(held.ok()) << held.error().message();
  ASSERT_TRUE(wait_until([&] { return held_ == 1; }));
  stop();
  EXPECT_EQ(agent_->active_sessions(), 0u);
  // The held client sees its session end (the agent's error, or the close).
  auto after = held->receive(5s);
  if (after.ok()) {
    EXPECT_STREQ((*after)["type"].GetString(), "error");
  } else {
    EXPECT_NE(after.error().message().find("connection closed"), std::string::npos)
        << after.error().message();
  }
}

// --token-file: a client must prove it holds the token; without it or with another one it
// is refused with a message that says so, and the agent goes on serving.
TEST_F(AgentTest, WithATokenOnlyClientsThatProveItAreServed) {
  auto token = Token::from_text("s3cret-from-a-kubernetes-secret\n", "test token");
  auto wrong = Token::from_text("another-secret-of-enough-length!", "wrong token");
  ASSERT_TRUE(token.ok() && wrong.ok());
  AgentOptions options;
  options.token = *token;
  start(options);

  auto none = open("echo");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("token"), std::string::npos) << none.error().message();

  auto bad = open_session("127.0.0.1", agent_->port(), "echo", "{}", 5s, &*wrong);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("token"), std::string::npos) << bad.error().message();
  EXPECT_TRUE(wait_until([&] { return agent_->counters().refused_access == 2; }));

  auto good = open_session("127.0.0.1", agent_->port(), "echo", "{}", 5s, &*token);
  ASSERT_TRUE(good.ok()) << good.error().message();
  ASSERT_TRUE(good->send(R"({"type":"bye"})").ok());
  auto result = good->receive(5s);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ((*result)["pings"].GetInt(), 0);
}

// --allow: a client from outside every listed network is refused before its hello.
TEST_F(AgentTest, AClientOutsideTheAllowListIsRefusedNamingIt) {
  auto network = parse_cidr("10.0.0.0/8");
  ASSERT_TRUE(network.ok()) << network.error().message();
  AgentOptions options;
  options.allow = {*network};
  start(options);
  auto refused = open("echo");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("does not accept clients from 127.0.0.1"),
            std::string::npos)
      << refused.error().message();
  EXPECT_TRUE(wait_until([&] { return agent_->counters().refused_access == 1; }));

  auto loopback = parse_cidr("127.0.0.0/8");
  ASSERT_TRUE(loopback.ok());
  stop();
  options.allow.push_back(*loopback);
  start(options);
  echo_session();
}

// Per-client limits: one client may hold --max-client-sessions sessions at once.
TEST_F(AgentTest, AClientBeyondItsSessionLimitIsRefusedWithTheFlag) {
  AgentOptions options;
  options.limits.max_sessions = 1;
  start(options);
  auto first = open("hold");
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_TRUE(wait_until([&] { return held_ == 1; }));
  auto second = open("echo");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message().find("--max-client-sessions 1"), std::string::npos)
      << second.error().message();
  EXPECT_TRUE(wait_until([&] { return agent_->counters().refused_limits == 1; }));
  ASSERT_TRUE(first->send(R"({"type":"release"})").ok());
  ASSERT_TRUE(first->receive(5s).ok());
  ASSERT_TRUE(wait_until([&] { return agent_->active_sessions() == 0; }));
  echo_session();
}

// Per-client limits on what one session may cost: each refusal names the flag that raises
// the limit, and a session within every limit is served.
TEST_F(AgentTest, ASessionCostingMoreThanALimitIsRefusedNamingTheFlag) {
  AgentOptions options;
  options.limits.max_message_bytes = 1 << 20;
  options.limits.max_memory_bytes = 8 << 20;
  options.limits.max_duration = 60s;
  start(options);
  auto costly = [&](const std::string& params) {
    return open_session("127.0.0.1", agent_->port(), "costly", params, 5s);
  };
  struct Case {
    const char* params;
    const char* flag;
  };
  for (const Case& c :
       {Case{R"({"message_bytes":2097152,"memory_bytes":4194304})", "(--max-message-size)"},
        Case{R"({"message_bytes":65536,"memory_bytes":16777216})", "(--max-client-memory)"},
        Case{R"({"message_bytes":65536,"memory_bytes":65536,"seconds":3600})",
             "(--max-session-duration)"}}) {
    auto refused = costly(c.params);
    ASSERT_FALSE(refused.ok()) << c.params;
    EXPECT_NE(refused.error().message().find(c.flag), std::string::npos)
        << refused.error().message();
  }
  EXPECT_TRUE(wait_until([&] { return agent_->counters().refused_limits == 3; }));

  // Memory counts over the client's sessions at once: a second session that would take
  // it past the limit is refused while the first runs, and served after.
  auto first = costly(R"({"message_bytes":65536,"memory_bytes":6291456})");
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto second = costly(R"({"message_bytes":65536,"memory_bytes":4194304})");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message().find("on top of the 6 MiB its running sessions hold"),
            std::string::npos)
      << second.error().message();
  ASSERT_TRUE(first->send(R"({"type":"bye"})").ok());
  ASSERT_TRUE(first->receive(5s).ok());
  ASSERT_TRUE(wait_until([&] { return agent_->active_sessions() == 0; }));
  auto later = costly(R"({"message_bytes":65536,"memory_bytes":4194304,"seconds":30})");
  ASSERT_TRUE(later.ok()) << later.error().message();
  ASSERT_TRUE(later->send(R"({"type":"bye"})").ok());
  EXPECT_TRUE(later->receive(5s).ok());
}

// A session that runs past --max-session-duration (a test that runs a count of iterations
// declares no length) is cut, and the agent serves the next client.
TEST_F(AgentTest, ASessionRunningPastTheMaxDurationIsCut) {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "agent-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
  AgentOptions options;
  options.limits.max_duration = 1s;
  start(options);
  auto held = open("hold");
  ASSERT_TRUE(held.ok()) << held.error().message();
  ASSERT_TRUE(wait_until([&] { return held_ == 1; }));
  EXPECT_TRUE(wait_until([&] { return agent_->counters().sessions_cut == 1; }, 8s));
  // The handler would hold the session for 10 s: it ends well before.
  EXPECT_TRUE(wait_until([&] { return held_ == 0 && agent_->active_sessions() == 0; }))
      << "the cut session still runs";
  spdlog::set_default_logger(previous);
  // Logged as what happened, not as the client closing its connection.
  EXPECT_NE(log.str().find("test=hold outcome=cut"), std::string::npos) << log.str();
  echo_session();
}

// The message that once crashed the agent: a valid hello, then a 1 MiB frame of '['.
// Its session ends with an error; the agent and other clients are unaffected.
TEST_F(AgentTest, ADeeplyNestedFrameEndsOnlyItsSession) {
  start();
  auto channel = open("echo");
  ASSERT_TRUE(channel.ok()) << channel.error().message();
  std::string nested(kMaxFrameBytes, '[');
  (void)channel->send(nested);
  EXPECT_TRUE(wait_until([&] { return agent_->counters().sessions_failed == 1; }));
  echo_session();
  auto raw = raw_connect();
  ASSERT_TRUE(send_frame(raw.get(), std::string(100000, '['), 5s).ok());
  EXPECT_TRUE(wait_until([&] { return agent_->counters().refused_other == 1; }));
  echo_session();
}

TEST(AgentClient, NothingListeningSaysHowToStartAnAgent) {
  auto listener = listen_tcp("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  auto port = bound_port(listener->get());
  ASSERT_TRUE(port.ok());
  listener->reset(); // the port is now closed
  auto channel = open_session("127.0.0.1", *port, "tcp_bw", "{}", 2s);
  ASSERT_FALSE(channel.ok());
  EXPECT_NE(channel.error().message().find(
                "no fabric-probe agent listening on 127.0.0.1:" + std::to_string(*port) +
                " \u2014 start `fabric-probe server`"),
            std::string::npos)
      << channel.error().message();
  EXPECT_EQ(exit_status_for(channel.error().code()), kExitSystem);
}

// A fake agent of protocol 2: this client must refuse its welcome.
TEST(AgentClient, RefusesAnAgentOfAnotherVersion) {
  auto listener = listen_tcp("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  uint16_t port = *bound_port(listener->get());
  std::thread fake([&] {
    int fd = ::accept(listener->get(), nullptr, nullptr);
    ASSERT_GE(fd, 0);
    Channel channel(UniqueFd(fd), "client");
    ASSERT_TRUE(channel.receive(5s).ok());
    ASSERT_TRUE(channel.send(make_welcome({1, "fabric-probe 0.1", "old-node", ""})).ok());
    (void)channel.receive(5s); // until the client hangs up
  });
  auto channel = open_session("127.0.0.1", port, "tcp_bw", "{}", 5s);
  fake.join();
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.error().code(), ErrorCode::kPeerIncompatible);
  EXPECT_NE(channel.error().message().find("agent at 127.0.0.1:" + std::to_string(port) +
                                           " speaks fabric-probe protocol 1, this client "
                                           "speaks 2: upgrade one side"),
            std::string::npos)
      << channel.error().message();
}

// A server that accepts and never answers: the handshake times out with a clear error.
TEST(AgentClient, SilentServerIsATimeout) {
  auto listener = listen_tcp("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  uint16_t port = *bound_port(listener->get());
  auto channel = open_session("127.0.0.1", port, "tcp_bw", "{}", 300ms);
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.error().code(), ErrorCode::kTimeout);
  EXPECT_NE(channel.error().message().find("no answer to the hello"), std::string::npos)
      << channel.error().message();
}

} // namespace
} // namespace fabric::probes
