// The checks behind fabric-probe's subcommands (server, tcp, mesh, lint, bw's verdict):
// what each flag becomes, and that every bad value is refused naming its flag.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "libs/agent_channel/auth.h"
#include "probes/agent/server_args.h"
#include "probes/lint/lint_args.h"
#include "probes/mesh/mesh_args.h"
#include "probes/rdma/rdma_report.h"
#include "probes/tcp/tcp_args.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;

// The token flags fall back to this variable: the tests must not see the caller's.
class SubcommandArgs : public ::testing::Test {
protected:
  void SetUp() override { ::unsetenv(kTokenFileEnv); }
};

template <typename T> void expect_refused(const Result<T>& r, const std::string& flag) {
  ASSERT_FALSE(r.ok()) << "accepted; expected an error naming " << flag;
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << r.error().message();
  EXPECT_EQ(r.error().message().rfind(flag + ": ", 0), 0u) << r.error().message();
}

TEST_F(SubcommandArgs, ServerFlagsBecomeTheAgentsOptions) {
  ServerArgs a;
  a.bind = "127.0.0.1";
  a.port = "0";
  a.max_sessions = "8";
  a.handshake_timeout = "1500ms";
  a.allow = {"10.0.0.0/8", "fd00::/64"};
  a.max_client_sessions = "2";
  a.max_message_size = "1M";
  a.max_client_memory = "2G";
  a.max_session_duration = "90s";
  auto o = make_agent_options(a);
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_EQ(o->bind_address, "127.0.0.1");
  EXPECT_EQ(o->port, 0);
  EXPECT_EQ(o->max_sessions, 8u);
  EXPECT_EQ(o->handshake_timeout, 1500ms);
  EXPECT_EQ(o->allow.size(), 2u);
  EXPECT_FALSE(o->token.has_value());
  EXPECT_EQ(o->limits.max_sessions, 2u);
  EXPECT_EQ(o->limits.max_message_bytes, 1u << 20);
  EXPECT_EQ(o->limits.max_memory_bytes, 2ull << 30);
  EXPECT_EQ(o->limits.max_duration, 90s);

  auto defaults = make_agent_options(ServerArgs{});
  ASSERT_TRUE(defaults.ok()) << defaults.error().message();
  EXPECT_EQ(defaults->port, kDefaultAgentPort);
  EXPECT_TRUE(defaults->allow.empty());
}

TEST_F(SubcommandArgs, ServerRefusesBadValuesNamingTheFlag) {
  auto with = [](auto set) {
    ServerArgs a;
    set(a);
    return make_agent_options(a);
  };
  expect_refused(with([](ServerArgs& a) { a.port = "65536"; }), "--port");
  expect_refused(with([](ServerArgs& a) { a.max_sessions = "0"; }), "--max-sessions");
  expect_refused(with([](ServerArgs& a) { a.handshake_timeout = "0s"; }), "--handshake-timeout");
  expect_refused(with([](ServerArgs& a) { a.stop_grace = "soon"; }), "--stop-grace");
  expect_refused(with([](ServerArgs& a) { a.allow = {"10.0.0.0/33"}; }), "--allow");
  expect_refused(with([](ServerArgs& a) { a.max_message_size = "big"; }), "--max-message-size");
  expect_refused(with([](ServerArgs& a) { a.max_session_duration = "500ms"; }),
                 "--max-session-duration");
  auto missing = with([](ServerArgs& a) { a.token_file = "/nonexistent/token"; });
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/token"), std::string::npos)
      << missing.error().message();
}

TEST_F(SubcommandArgs, TcpPlanFollowsTheMode) {
  TcpArgs a;
  a.host = "node2:9000";
  a.mode = "lat";
  a.size = "4K";
  a.iters = "50";
  auto p = make_tcp_plan(a);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_FALSE(p->bandwidth);
  EXPECT_TRUE(p->latency);
  EXPECT_EQ(p->agent.host, "node2");
  EXPECT_EQ(p->agent.port, 9000);
  EXPECT_EQ(p->lat.size, 4096u);
  EXPECT_EQ(p->bw.write_size, 4096u); // one --size for both tests
  EXPECT_EQ(p->lat.iters, 50u);

  a = TcpArgs{};
  a.host = "node2";
  a.port = "7000";
  a.bidir = true;
  a.min_bw = "2.5";
  p = make_tcp_plan(a);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->agent.port, 7000);
  EXPECT_EQ(p->bw.direction, TcpDirection::kBidir);
  EXPECT_EQ(p->min_bw_gbps, 2.5);
}

TEST_F(SubcommandArgs, TcpRefusesBadValuesAndCombinations) {
  auto with = [](auto set) {
    TcpArgs a;
    a.host = "node2";
    set(a);
    return make_tcp_plan(a);
  };
  expect_refused(with([](TcpArgs& a) { a.mode = "fast"; }), "--mode");
  expect_refused(with([](TcpArgs& a) { a.duration = "1s", a.bytes = "1M"; }), "--bytes");
  expect_refused(with([](TcpArgs& a) { a.bytes = "0"; }), "--bytes");
  expect_refused(with([](TcpArgs& a) { a.reverse = a.bidir = true; }), "--bidir");
  expect_refused(with([](TcpArgs& a) { a.streams = "0"; }), "--streams");
  expect_refused(with([](TcpArgs& a) { a.min_bw = "fast"; }), "--min-bw");
  expect_refused(with([](TcpArgs& a) { a.mode = "lat", a.min_bw = "1"; }), "--min-bw");
}

TEST_F(SubcommandArgs, TcpVerdictComparesTheReceivedBandwidth) {
  TcpArgs a;
  a.host = "node2";
  a.min_bw = "10";
  auto plan = make_tcp_plan(a);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  TcpBwReport report;
  TcpBwDirection forward;
  forward.receiver = {1'000'000'000, 1.0}; // 8 Gb/s
  report.directions.push_back(forward);
  auto below = tcp_verdict(*plan, &report);
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.error().code(), ErrorCode::kBelowThreshold);
  EXPECT_NE(below.error().message().find("8.000 Gb/s is below --min-bw 10 Gb/s"), std::string::npos)
      << below.error().message();

  report.directions[0].receiver.bytes = 2'000'000'000; // 16 Gb/s
  EXPECT_TRUE(tcp_verdict(*plan, &report).ok());
  EXPECT_TRUE(tcp_verdict(*plan, nullptr).ok()); // no bandwidth test, nothing to judge
}

TEST_F(SubcommandArgs, TcpJsonHoldsBothReportsWhenBothRan) {
  TcpBwReport bw;
  TcpLatReport lat;
  std::string both = render_tcp_json(&bw, &lat);
  EXPECT_NE(both.find("\"test\": \"tcp\""), std::string::npos) << both;
  EXPECT_NE(both.find("\"tcp_bw\""), std::string::npos) << both;
  EXPECT_NE(both.find("\"tcp_lat\""), std::string::npos) << both;
  EXPECT_EQ(render_tcp_json(&bw, nullptr), render_tcp_bw_json(bw));
  EXPECT_EQ(render_tcp_json(nullptr, &lat), render_tcp_lat_json(lat));
}

TEST_F(SubcommandArgs, MeshOptionsFromAHostListAndTests) {
  MeshArgs a;
  a.hosts = "node1,node2:9000,node3";
  a.port = "7000";
  a.tests = "tcp_bw,,rdma_lat";
  a.duration = "2s";
  a.outlier_threshold = "5";
  a.no_retest = true;
  auto o = make_mesh_options(a);
  ASSERT_TRUE(o.ok()) << o.error().message();
  ASSERT_EQ(o->hosts.size(), 3u);
  EXPECT_EQ(o->hosts[0].agent.port, 7000);
  EXPECT_EQ(o->hosts[1].agent.port, 9000);
  ASSERT_EQ(o->tests.size(), 2u); // the empty name between the commas is skipped
  EXPECT_EQ(o->tests[0].name, "tcp_bw");
  EXPECT_EQ(o->tests[1].name, "rdma_lat");
  EXPECT_EQ(o->pair_timeout, 62s); // the duration plus a minute for set-up
  EXPECT_EQ(o->outlier_threshold, 5.0);
  EXPECT_FALSE(o->retest);
}

TEST_F(SubcommandArgs, MeshRefusesBadValuesNamingTheFlag) {
  auto with = [](auto set) {
    MeshArgs a;
    a.hosts = "node1,node2";
    set(a);
    return make_mesh_options(a);
  };
  expect_refused(with([](MeshArgs& a) { a.tests = ","; }), "--test");
  expect_refused(with([](MeshArgs& a) { a.duration = "0s"; }), "--duration");
  expect_refused(with([](MeshArgs& a) { a.duration = "5s", a.pair_timeout = "5s"; }),
                 "--pair-timeout");
  expect_refused(with([](MeshArgs& a) { a.outlier_threshold = "0"; }), "--outlier-threshold");
  expect_refused(with([](MeshArgs& a) { a.port = "0"; }), "--port");
}

TEST_F(SubcommandArgs, MeshVerdictPutsMissingPairsBeforeOutliers) {
  MeshReport clean;
  EXPECT_TRUE(mesh_verdict({clean}).ok());

  MeshReport flagged;
  flagged.outliers.cells.push_back(FlaggedCell{});
  auto outliers = mesh_verdict({clean, flagged});
  ASSERT_FALSE(outliers.ok());
  EXPECT_EQ(outliers.error().code(), ErrorCode::kBelowThreshold);
  EXPECT_NE(outliers.error().message().find("1 outliers flagged"), std::string::npos);

  MeshReport failed;
  failed.failures.push_back(MeshFailure{0, 1, "refused"});
  auto missing = mesh_verdict({flagged, failed});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kSystem);
  EXPECT_NE(missing.error().message().find("1 pairs without a result"), std::string::npos);
}

TEST_F(SubcommandArgs, LintOptions) {
  LintArgs a;
  a.dscp = 46;
  a.expect_netns_mode = "exclusive";
  a.min_memlock = "1G";
  auto o = make_lint_options(a);
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_EQ(o->dscp, 46);
  EXPECT_EQ(o->expect_netns_mode, rdma::NetnsMode::kExclusive);
  EXPECT_EQ(o->min_memlock, 1ull << 30);

  auto defaults = make_lint_options(LintArgs{});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->dscp, kDefaultRoceDscp);
  EXPECT_FALSE(defaults->expect_netns_mode.has_value());

  a = LintArgs{};
  a.dscp = 64;
  expect_refused(make_lint_options(a), "--dscp");
  a = LintArgs{};
  a.expect_netns_mode = "private";
  expect_refused(make_lint_options(a), "--expect-netns-mode");
  a = LintArgs{};
  a.min_memlock = "lots";
  expect_refused(make_lint_options(a), "--min-memlock");
}

TEST_F(SubcommandArgs, BandwidthVerdictNamesWhatWasMeasured) {
  RdmaBwReport report;
  EXPECT_TRUE(rdma_bw_verdict(report).ok()); // no threshold asked for

  BwThreshold threshold;
  threshold.min_gbps = 100;
  threshold.required_gbps = 100;
  threshold.passed = false;
  report.threshold = threshold;
  // 65536 B x 76,294 messages in 1 s: 40 Gb/s.
  report.results.push_back(BwSizeResult{65536, 76294, {76294, 5'000'013'824, 1.0, 5e9}, {}});
  auto below = rdma_bw_verdict(report);
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.error().code(), ErrorCode::kBelowThreshold);
  EXPECT_NE(below.error().message().find("measured 40.000 Gb/s, below the required 100.000 Gb/s"),
            std::string::npos)
      << below.error().message();

  report.threshold->passed = true;
  EXPECT_TRUE(rdma_bw_verdict(report).ok());
}

} // namespace
} // namespace fabric::probes
