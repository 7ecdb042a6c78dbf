// "run" delegation asked of an agent without a token, as a stranger would ask it: the
// agent runs a test only against a host where an agent answers, and a target that is not
// one (a program that prints a banner, a closed port, a port that never answers) gets one
// refusal that does not say which of them it found. The agent and a client sit in two
// namespaces joined by a veth; the targets live in the client's namespace.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/netns.h"
#include "libs/agent_channel/tcp_socket.h"
#include "probes/agent/protocol.h"
#include "probes/agent/session.h"
#include "tests/netns/probe/probe_processes.h"
#include "tests/netns/test_network.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;
using testing::ProbeAgent;
using testing::TempDir;
using testing::TestNetwork;

constexpr const char* kAgentAddress = "10.79.0.1";
constexpr const char* kClientAddress = "10.79.0.2";
constexpr const char* kBanner = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3 secret-build-7\r\n";

// A plain TCP server: each connection gets the banner, has what it sends read for at most a
// second, gets a complaint and is closed, the way sshd treats a stranger.
class BannerServer {
public:
  BannerServer(const std::string& ns_path, const std::string& address) {
    auto fd = netns::run_in(ns_path, [&] { return probes::listen_tcp(address, 0); });
    EXPECT_TRUE(fd.ok()) << fd.error().message();
    if (!fd.ok()) return;
    listener_ = std::move(*fd);
    auto port = probes::bound_port(listener_.get());
    port_ = port.ok() ? *port : 0;
    thread_ = std::thread([this] { serve(); });
  }
  ~BannerServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }

private:
  void serve() {
    while (!stop_) {
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!client) continue;
      ++connections_;
      (void)::send(client.get(), kBanner, std::strlen(kBanner), MSG_NOSIGNAL);
      pollfd c{client.get(), POLLIN, 0};
      char junk[4096];
      if (::poll(&c, 1, 1000) > 0) (void)::recv(client.get(), junk, sizeof junk, 0);
      const char complaint[] = "Invalid SSH identification string.\r\n";
      (void)::send(client.get(), complaint, sizeof complaint - 1, MSG_NOSIGNAL);
    }
  }

  UniqueFd listener_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

// What a client got back from a "run" request.
struct RunAnswer {
  bool result = false; // a report came back
  std::string text;    // the report, or the refusal's message
};

class DelegationNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!testing::can_manage_network()) GTEST_SKIP() << testing::skip_reason();
    agent_ns_ = net_.add_namespace("src");
    client_ns_ = net_.add_namespace("cli");
    auto [a, b] = net_.add_veth("d", ns("src"), ns("cli"));
    ASSERT_FALSE(a.empty());
    ASSERT_TRUE(testing::run_checked({"ip", "-n", ns("src"), "addr", "add",
                                      std::string(kAgentAddress) + "/24", "dev", a})
                    .ok());
    ASSERT_TRUE(testing::run_checked({"ip", "-n", ns("cli"), "addr", "add",
                                      std::string(kClientAddress) + "/24", "dev", b})
                    .ok());
    // Without a token, as the issue's attacker found it; a short handshake timeout keeps
    // the silent target's case short.
    agent_ = std::make_unique<ProbeAgent>(ns("src"), dir_, "source",
                                          std::vector<std::string>{"--handshake-timeout", "2s"});
    ASSERT_TRUE(agent_->ready()) << agent_->log();
  }

  std::string ns(const std::string& suffix) const { return net_.ns_name(suffix); }
  static std::string client_side(uint16_t port) {
    return probes::format_endpoint(kClientAddress, port);
  }

  // Asks the agent listening on `agent_port`, from the client's namespace, to run
  // tcp_lat against `peer`.
  Result<RunAnswer> run(uint16_t agent_port, const std::string& peer) {
    return netns::run_in(client_ns_, [&]() -> Result<RunAnswer> {
      std::string params = R"({"test":"tcp_lat","peer":")" + peer + R"(","params":{"iters":20}})";
      FABRIC_ASSIGN_OR_RETURN(
          probes::Session session,
          probes::connect_session(kAgentAddress, agent_port, probes::kRunTest, params, 5s));
      FABRIC_ASSIGN_OR_RETURN(rapidjson::Document answer, session.channel.receive(20s));
      if (probes::message_type(answer) == "result") {
        return RunAnswer{true, json::to_string(answer["report"])};
      }
      return RunAnswer{false, probes::error_from_message(answer, "agent").message()};
    });
  }

  TestNetwork net_;
  std::string agent_ns_, client_ns_;
  TempDir dir_;
  std::unique_ptr<ProbeAgent> agent_;
};

// The attack of the issue: what answered at a port must not reach the client.
TEST_F(DelegationNetns, ANonAgentTargetGetsOneRefusalThatRevealsNothing) {
  BannerServer banner(client_ns_, kClientAddress);
  ASSERT_NE(banner.port(), 0);
  // A port that accepts connections (the kernel completes them) and never answers.
  auto silent = netns::run_in(client_ns_, [] { return probes::listen_tcp(kClientAddress, 0); });
  ASSERT_TRUE(silent.ok()) << silent.error().message();
  auto silent_port = probes::bound_port(silent->get());
  ASSERT_TRUE(silent_port.ok());

  auto at_banner = run(agent_->port(), client_side(banner.port()));
  auto at_closed = run(agent_->port(), client_side(1));
  auto at_silent = run(agent_->port(), client_side(*silent_port));
  ASSERT_TRUE(at_banner.ok()) << at_banner.error().message();
  ASSERT_TRUE(at_closed.ok()) << at_closed.error().message();
  ASSERT_TRUE(at_silent.ok()) << at_silent.error().message();
  // The agent did reach the banner: what it learnt stays with it.
  EXPECT_GE(banner.connections(), 1);
  EXPECT_FALSE(at_banner->result);
  EXPECT_EQ(at_banner->text.find("SSH"), std::string::npos) << at_banner->text;
  EXPECT_EQ(at_banner->text.find("secret-build"), std::string::npos) << at_banner->text;

  // The three answers differ only in the target the client named.
  auto unnamed = [](std::string text, const std::string& peer) {
    auto at = text.find(peer);
    EXPECT_NE(at, std::string::npos) << text;
    return at == std::string::npos ? text : text.replace(at, peer.size(), "TARGET");
  };
  std::string banner_text = unnamed(at_banner->text, client_side(banner.port()));
  EXPECT_EQ(unnamed(at_closed->text, client_side(1)), banner_text);
  EXPECT_EQ(unnamed(at_silent->text, client_side(*silent_port)), banner_text);
  EXPECT_NE(banner_text.find("none completed a handshake at TARGET"), std::string::npos)
      << banner_text;
  // The operator still finds the reason in the agent's log.
  EXPECT_NE(agent_->log().find("no test against " + client_side(1)), std::string::npos)
      << agent_->log();
}

TEST_F(DelegationNetns, ARealAgentIsStillATarget) {
  ProbeAgent target(ns("cli"), dir_, "target");
  ASSERT_TRUE(target.ready()) << target.log();
  auto answer = run(agent_->port(), client_side(target.port()));
  ASSERT_TRUE(answer.ok()) << answer.error().message();
  ASSERT_TRUE(answer->result) << answer->text;
  auto report = json::parse(answer->text, "report");
  ASSERT_TRUE(report.ok()) << answer->text;
  EXPECT_STREQ((*report)["test"].GetString(), "tcp_lat");
  EXPECT_EQ((*report)["summary"]["count"].GetUint64(), 20u);
  // The source checked the target with a ping before it ran the test there.
  EXPECT_NE(target.log().find("test=ping outcome=ok"), std::string::npos) << target.log();
  EXPECT_NE(target.log().find("test=tcp_lat outcome=ok"), std::string::npos) << target.log();
}

// A client the agent would not serve a test to cannot have it run one either: the agent
// refuses it before it connects anywhere.
TEST_F(DelegationNetns, AClientOutsideTheAllowListIsNotDelegatedFor) {
  ProbeAgent guarded(ns("src"), dir_, "guarded", {"--allow", std::string(kAgentAddress) + "/32"});
  ASSERT_TRUE(guarded.ready()) << guarded.log();
  BannerServer banner(client_ns_, kClientAddress);
  ASSERT_NE(banner.port(), 0);
  auto answer = run(guarded.port(), client_side(banner.port()));
  ASSERT_FALSE(answer.ok());
  EXPECT_NE(
      answer.error().message().find("does not accept clients from " + std::string(kClientAddress)),
      std::string::npos)
      << answer.error().message();
  EXPECT_EQ(banner.connections(), 0);
}

} // namespace
} // namespace fabric
