// `fabric-probe server` in one namespace and `fabric-probe tcp` in another, over a veth:
// the built binaries as a user runs them, over IPv4 and IPv6, with a client killed in the
// middle of a test and a peer speaking another protocol version.
#include <arpa/inet.h>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/netns.h"
#include "common/subprocess.h"
#include "libs/agent_channel/channel.h"
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

class TcpProbeNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!testing::can_manage_network()) GTEST_SKIP() << testing::skip_reason();
    net_.add_namespace("srv");
    net_.add_namespace("cli");
    auto [a, b] = net_.add_veth("t", ns("srv"), ns("cli"));
    ASSERT_FALSE(a.empty());
    for (const auto& [n, dev, v4, v6] :
         {std::tuple{ns("srv"), a, "10.77.0.1/24", "fd00:77::1/64"},
          std::tuple{ns("cli"), b, "10.77.0.2/24", "fd00:77::2/64"}}) {
      ASSERT_TRUE(testing::run_checked({"ip", "-n", n, "addr", "add", v4, "dev", dev}).ok());
      ASSERT_TRUE(
          testing::run_checked({"ip", "-n", n, "addr", "add", v6, "dev", dev, "nodad"}).ok());
    }
    agent_ = std::make_unique<ProbeAgent>(ns("srv"), dir_, "agent");
    ASSERT_TRUE(agent_->ready()) << "agent did not start: " << agent_->log();
  }

  std::string ns(const std::string& suffix) const { return net_.ns_name(suffix); }
  std::string agent_at(const std::string& address) const {
    return probes::format_endpoint(address, agent_->port());
  }

  // Runs the built fabric-probe in the client namespace.
  SubprocessResult probe(std::vector<std::string> args) {
    args.insert(args.begin(), {"ip", "netns", "exec", ns("cli"), FABRIC_PROBE_BINARY});
    SubprocessOptions options;
    options.timeout = 60s;
    auto r = run_subprocess(args, options);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : SubprocessResult{};
  }

  rapidjson::Document parse(const std::string& text) {
    auto doc = json::parse(text, "fabric-probe output");
    EXPECT_TRUE(doc.ok()) << doc.error().message() << "\n" << text;
    return doc.ok() ? std::move(*doc) : rapidjson::Document();
  }

  TestNetwork net_;
  TempDir dir_;
  std::unique_ptr<ProbeAgent> agent_;
};

void expect_ordered_latency(const rapidjson::Value& summary) {
  double min = summary["min_us"].GetDouble(), p50 = summary["p50_us"].GetDouble(),
         p99 = summary["p99_us"].GetDouble(), max = summary["max_us"].GetDouble();
  EXPECT_GT(min, 0);
  EXPECT_LE(min, p50);
  EXPECT_LE(p50, p99);
  EXPECT_LE(p99, max);
}

TEST_F(TcpProbeNetns, BandwidthAndLatencyAcrossTheVeth) {
  auto r = probe({"tcp", agent_at("10.77.0.1"), "-D", "1s", "-n", "500", "--json"});
  ASSERT_EQ(r.exit_status, 0) << r.stderr_text;
  auto doc = parse(r.stdout_text);
  ASSERT_TRUE(doc.IsObject());
  EXPECT_STREQ(doc["test"].GetString(), "tcp");

  const auto& bw = doc["tcp_bw"];
  EXPECT_EQ(bw["schema_version"].GetInt(), 1);
  const auto& direction = bw["directions"][0];
  EXPECT_STREQ(direction["direction"].GetString(), "client_to_agent");
  uint64_t sent = direction["sender"]["bytes"].GetUint64();
  uint64_t received = direction["receiver"]["bytes"].GetUint64();
  EXPECT_GT(received, 0u);
  EXPECT_EQ(sent, received) << "the agent received other than what the client sent";
  EXPECT_GT(bw["summary"]["avg_gbps"].GetDouble(), 0);

  const auto& lat = doc["tcp_lat"];
  EXPECT_EQ(lat["summary"]["count"].GetUint64(), 500u);
  expect_ordered_latency(lat["summary"]);
  EXPECT_NE(agent_->log().find("test=tcp_bw outcome=ok"), std::string::npos) << agent_->log();
}

TEST_F(TcpProbeNetns, ReverseByteCountOverIpv6) {
  auto r = probe({"tcp", agent_at("fd00:77::1"), "--mode", "bw", "--reverse", "--bytes", "64M",
                  "-P", "2", "--json"});
  ASSERT_EQ(r.exit_status, 0) << r.stderr_text;
  auto doc = parse(r.stdout_text);
  const auto& direction = doc["directions"][0];
  EXPECT_STREQ(direction["direction"].GetString(), "agent_to_client");
  EXPECT_EQ(direction["sender"]["bytes"].GetUint64(), 64u << 20);
  EXPECT_EQ(direction["receiver"]["bytes"].GetUint64(), 64u << 20);
  EXPECT_EQ(direction["streams"].Size(), 2u);
  EXPECT_STREQ(doc["agent"].GetString(), agent_at("fd00:77::1").c_str());

  auto lat = probe({"tcp", agent_at("fd00:77::1"), "--mode", "lat", "-n", "200"});
  ASSERT_EQ(lat.exit_status, 0) << lat.stderr_text;
  EXPECT_NE(lat.stdout_text.find("200 iterations, RTT/2 in us"), std::string::npos)
      << lat.stdout_text;
}

TEST_F(TcpProbeNetns, MissedMinimumBandwidthExitsThree) {
  auto r =
      probe({"tcp", agent_at("10.77.0.1"), "--mode", "bw", "-D", "300ms", "--min-bw", "100000000"});
  EXPECT_EQ(r.exit_status, 3) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("client -> agent"), std::string::npos) << "report not printed";
  EXPECT_NE(r.stderr_text.find("is below --min-bw 1e+08 Gb/s"), std::string::npos) << r.stderr_text;
}

TEST_F(TcpProbeNetns, NothingListeningSaysToStartTheServer) {
  auto r = probe({"tcp", "10.77.0.1:1", "--mode", "lat"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.stderr_text.find("no fabric-probe agent listening on 10.77.0.1:1 \u2014 start "
                               "`fabric-probe server`"),
            std::string::npos)
      << r.stderr_text;
}

// A node whose DNS server takes the query and never answers: glibc alone would wait 5 s
// per try (twice here), far past the probe's --timeout. The name's lookup is cut at it.
TEST_F(TcpProbeNetns, ANameTheDnsNeverAnswersFailsAtTheTimeout) {
  // `ip netns exec` puts /etc/netns/NAME/resolv.conf in place of /etc/resolv.conf.
  const std::string etc = "/etc/netns/" + ns("cli");
  struct RemoveEtc {
    std::string dir;
    ~RemoveEtc() { std::filesystem::remove_all(dir); }
  } remove_etc{etc};
  std::filesystem::create_directories(etc);
  std::ofstream(etc + "/resolv.conf") << "nameserver 127.0.0.1\noptions timeout:5 attempts:2\n";
  ASSERT_TRUE(testing::run_checked({"ip", "-n", ns("cli"), "link", "set", "lo", "up"}).ok());
  // The server: a UDP socket on port 53 that nobody reads.
  auto silent_dns = netns::run_in("/var/run/netns/" + ns("cli"), []() -> Result<UniqueFd> {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(53);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
      return Error::from_errno(errno, "bind", "127.0.0.1:53");
    return fd;
  });
  ASSERT_TRUE(silent_dns.ok()) << silent_dns.error().message();

  auto r = probe({"tcp", "agent.fabric.test", "--mode", "lat", "--timeout", "1s"});
  EXPECT_EQ(r.exit_status, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resolving agent.fabric.test"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("no answer within 1000 ms"), std::string::npos) << r.stderr_text;
}

// --token-file as the DaemonSet uses it: the agent and the clients read the same mounted
// Secret (a trailing newline included), by flag or by FABRIC_PROBE_TOKEN_FILE; a client
// without it is refused and told why, and the agent serves the next one.
TEST_F(TcpProbeNetns, TheAgentsTokenFileIsReadByTheClients) {
  const std::string token = dir_.file("token");
  std::ofstream(token) << "a-secret-from-a-kubernetes-secret-volume\n";
  ProbeAgent guarded(ns("srv"), dir_, "guarded", {"--token-file", token});
  ASSERT_TRUE(guarded.ready()) << guarded.log();
  const std::string at = probes::format_endpoint("10.77.0.1", guarded.port());

  auto refused = probe({"tcp", at, "--mode", "lat", "-n", "10"});
  EXPECT_EQ(refused.exit_status, 2) << refused.stderr_text;
  EXPECT_NE(refused.stderr_text.find("token"), std::string::npos) << refused.stderr_text;

  auto by_flag = probe({"tcp", at, "--mode", "lat", "-n", "10", "--token-file", token});
  EXPECT_EQ(by_flag.exit_status, 0) << by_flag.stderr_text;

  std::vector<std::string> by_env_args = {"ip",
                                          "netns",
                                          "exec",
                                          ns("cli"),
                                          "env",
                                          "FABRIC_PROBE_TOKEN_FILE=" + token,
                                          FABRIC_PROBE_BINARY,
                                          "tcp",
                                          at,
                                          "--mode",
                                          "lat",
                                          "-n",
                                          "10"};
  auto by_env = run_subprocess(by_env_args, {});
  ASSERT_TRUE(by_env.ok());
  EXPECT_EQ(by_env->exit_status, 0) << by_env->stderr_text;

  auto missing = probe({"tcp", at, "--mode", "lat", "--token-file", dir_.file("absent")});
  EXPECT_EQ(missing.exit_status, 2) << missing.stderr_text;
  EXPECT_NE(missing.stderr_text.find(dir_.file("absent")), std::string::npos)
      << missing.stderr_text;
}

TEST_F(TcpProbeNetns, AgentSurvivesAClientKilledMidTest) {
  testing::BackgroundProcess client({"ip", "netns", "exec", ns("cli"), FABRIC_PROBE_BINARY, "tcp",
                                     agent_at("10.77.0.1"), "--mode", "bw", "-D", "60s"},
                                    dir_.file("client.out"), dir_.file("client.err"));
  ASSERT_TRUE(client.started());
  // Mid-test: the control and the data connection are both established.
  std::string filter = "( sport = :" + std::to_string(agent_->port()) + " )";
  ASSERT_TRUE(testing::wait_for(
      [&] {
        auto ss = run_subprocess(
            {"ip", "netns", "exec", ns("srv"), "ss", "-Htn", "state", "established", filter});
        return ss.ok() && std::count(ss->stdout_text.begin(), ss->stdout_text.end(), '\n') >= 2;
      },
      10s))
      << "the test never started: " << client.stderr_text();
  auto killed = client.stop(SIGKILL, 5s);
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(*killed, 128 + SIGKILL);

  ASSERT_TRUE(testing::wait_for(
      [&] { return agent_->log().find("test=tcp_bw outcome=error") != std::string::npos; }, 20s))
      << "the agent did not end the orphaned session: " << agent_->log();
  EXPECT_TRUE(agent_->process().running());
  auto r = probe({"tcp", agent_at("10.77.0.1"), "--mode", "bw", "--bytes", "16M", "--json"});
  ASSERT_EQ(r.exit_status, 0) << r.stderr_text;
  auto doc = parse(r.stdout_text);
  EXPECT_EQ(doc["directions"][0]["receiver"]["bytes"].GetUint64(), 16u << 20);
}

TEST_F(TcpProbeNetns, AnotherProtocolVersionIsRefusedNamingBoth) {
  // A client of protocol 1 (before the challenge-response), crafted by hand: the agent must refuse
  // it and say why.
  auto answer = netns::run_in("/var/run/netns/" + ns("cli"), [&]() -> Result<std::string> {
    FABRIC_ASSIGN_OR_RETURN(UniqueFd fd, probes::connect_tcp("10.77.0.1", agent_->port(), 5s));
    FABRIC_ASSIGN_OR_RETURN(std::string hello, probes::make_hello("tcp_bw", "{}", "", 1));
    FABRIC_TRY(probes::send_frame(fd.get(), hello, 5s));
    probes::Channel channel(std::move(fd), "agent");
    return channel.receive_text(5s);
  });
  ASSERT_TRUE(answer.ok()) << answer.error().message();
  auto doc = parse(*answer);
  EXPECT_STREQ(doc["type"].GetString(), "error");
  EXPECT_STREQ(doc["code"].GetString(), "incompatible_version");
  EXPECT_STREQ(doc["message"].GetString(),
               "handshake: the client speaks fabric-probe protocol 1, this agent speaks 2: "
               "upgrade one side");
  EXPECT_NE(agent_->log().find("refused (incompatible_version)"), std::string::npos)
      << agent_->log();
}

TEST_F(TcpProbeNetns, AgentStopsCleanlyOnSigterm) {
  auto status = agent_->process().stop(SIGTERM, 15s);
  ASSERT_TRUE(status.ok()) << status.error().message();
  EXPECT_EQ(*status, 0) << agent_->log();
  EXPECT_EQ(agent_->process().stdout_text(),
            "listening on [::]:" + std::to_string(agent_->port()) + "\n");
}

} // namespace
} // namespace fabric
