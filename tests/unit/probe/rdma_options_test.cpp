// fabric-probe bw / lat options: defaults, every bad value refused naming its flag (exit
// 1), sweeps, and the params object that carries them to the agent.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/subprocess.h"
#include "probes/rdma/rdma_options.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;

RdmaArgs args_for(const std::string& host = "10.0.0.2") {
  RdmaArgs a;
  a.host = host;
  return a;
}

TEST(RdmaOptions, DefaultsFollowPerftest) {
  auto bw = make_rdma_options(RdmaTest::kBandwidth, args_for());
  ASSERT_TRUE(bw.ok()) << bw.error().message();
  EXPECT_EQ(bw->op, RdmaOp::kWrite);
  EXPECT_EQ(bw->sizes, std::vector<uint64_t>{65536});
  EXPECT_EQ(bw->iters, 5000u);
  EXPECT_EQ(bw->tx_depth, 128u);
  EXPECT_EQ(bw->qps, 1u);
  EXPECT_EQ(bw->agent_port, 18515);
  EXPECT_FALSE(bw->mtu.has_value());
  EXPECT_FALSE(bw->gid_index.has_value());

  auto lat = make_rdma_options(RdmaTest::kLatency, args_for());
  ASSERT_TRUE(lat.ok()) << lat.error().message();
  EXPECT_EQ(lat->op, RdmaOp::kSend);
  EXPECT_EQ(lat->sizes, std::vector<uint64_t>{2});
  EXPECT_EQ(lat->iters, 1000u);
}

TEST(RdmaOptions, ParsesEveryFlag) {
  RdmaArgs a = args_for("node-b:19000");
  a.op = "read";
  a.sweep = "4K:16K";
  a.qps = "4";
  a.bidir = true;
  a.duration = "2s";
  a.tx_depth = "256";
  a.dscp = "26";
  a.sl = "3";
  a.mtu = "4096";
  a.gid_index = "3";
  a.remote_gid_index = "5";
  a.device = "mlx5_0";
  a.remote_device = "mlx5_1";
  a.ib_port = "2";
  a.min_bw_pct = "90";
  a.timeout = "3s";
  a.json = true;
  auto o = make_rdma_options(RdmaTest::kBandwidth, a);
  ASSERT_TRUE(o.ok()) << o.error().message();
  EXPECT_EQ(o->host, "node-b");
  EXPECT_EQ(o->agent_port, 19000);
  EXPECT_EQ(o->op, RdmaOp::kRead);
  EXPECT_EQ(o->sizes, (std::vector<uint64_t>{4096, 8192, 16384}));
  EXPECT_EQ(o->qps, 4u);
  EXPECT_TRUE(o->bidir);
  EXPECT_EQ(o->iters, 0u);
  ASSERT_TRUE(o->duration.has_value());
  EXPECT_EQ(*o->duration, 2s);
  EXPECT_EQ(o->tx_depth, 256u);
  // DSCP 26 (AF31) is traffic class 104: DSCP sits above the two ECN bits.
  EXPECT_EQ(o->traffic_class, 104);
  EXPECT_EQ(o->sl, 3);
  EXPECT_EQ(o->mtu, 4096u);
  EXPECT_EQ(o->gid_index, 3u);
  EXPECT_EQ(o->remote_gid_index, 5u);
  EXPECT_EQ(o->device, "mlx5_0");
  EXPECT_EQ(o->remote_device, "mlx5_1");
  EXPECT_EQ(o->ib_port, 2u);
  EXPECT_EQ(o->min_bw_pct, 90.0);
  EXPECT_EQ(o->timeout, 3s);
  EXPECT_TRUE(o->json);
}

TEST(RdmaOptions, SweepIsEveryPowerOfTwo) {
  auto s = parse_sweep("2:64K", "--sweep");
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_EQ(s->size(), 16u);
  EXPECT_EQ(s->front(), 2u);
  EXPECT_EQ(s->back(), 65536u);
  for (std::size_t i = 1; i < s->size(); ++i)
    EXPECT_EQ((*s)[i], 2 * (*s)[i - 1]);
  auto one = parse_sweep("4K:4K", "--sweep");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<uint64_t>{4096});
}

struct BadCase {
  const char* flag;                   // what the message must start with
  std::function<void(RdmaArgs&)> set; // the bad argument(s)
  RdmaTest test = RdmaTest::kBandwidth;
};

TEST(RdmaOptions, EveryBadValueNamesItsFlag) {
  const std::vector<BadCase> cases = {
      {"HOST", [](RdmaArgs& a) { a.host = ""; }},
      {"--op", [](RdmaArgs& a) { a.op = "atomic"; }},
      {"--size", [](RdmaArgs& a) { a.size = "0"; }},
      {"--size", [](RdmaArgs& a) { a.size = "2G"; }},
      {"--size", [](RdmaArgs& a) { a.size = "lots"; }},
      {"--sweep", [](RdmaArgs& a) { a.sweep = "3:64"; }},
      {"--sweep", [](RdmaArgs& a) { a.sweep = "64:2"; }},
      {"--sweep", [](RdmaArgs& a) { a.sweep = "64"; }},
      {"--sweep",
       [](RdmaArgs& a) {
         a.size = "64";
         a.sweep = "2:4";
       }},
      {"--iters", [](RdmaArgs& a) { a.iters = "0"; }},
      {"--iters", [](RdmaArgs& a) { a.iters = "many"; }},
      {"--duration",
       [](RdmaArgs& a) {
         a.iters = "10";
         a.duration = "1s";
       }},
      {"--duration", [](RdmaArgs& a) { a.duration = "0s"; }},
      {"--duration", [](RdmaArgs& a) { a.duration = "soon"; }},
      {"--duration", [](RdmaArgs& a) { a.duration = "1s"; }, RdmaTest::kLatency},
      {"--qps", [](RdmaArgs& a) { a.qps = "0"; }},
      {"--qps", [](RdmaArgs& a) { a.qps = "65"; }},
      {"--tx-depth", [](RdmaArgs& a) { a.tx_depth = "0"; }},
      {"--tx-depth", [](RdmaArgs& a) { a.tx_depth = "9000"; }},
      {"--gid-index", [](RdmaArgs& a) { a.gid_index = "256"; }},
      {"--iters", [](RdmaArgs& a) { a.iters = "10000001"; }, RdmaTest::kLatency},
      {"--gid-index",
       [](RdmaArgs& a) {
         a.gid_index = "1";
         a.cm = true;
       }},
      {"--remote-gid-index", [](RdmaArgs& a) { a.remote_gid_index = "x"; }},
      {"--tclass", [](RdmaArgs& a) { a.tclass = "256"; }},
      {"--dscp", [](RdmaArgs& a) { a.dscp = "64"; }},
      {"--dscp",
       [](RdmaArgs& a) {
         a.dscp = "26";
         a.tclass = "104";
       }},
      {"--sl", [](RdmaArgs& a) { a.sl = "16"; }},
      {"--sl",
       [](RdmaArgs& a) {
         a.sl = "1";
         a.cm = true;
       }},
      {"--mtu", [](RdmaArgs& a) { a.mtu = "1500"; }},
      {"--mtu", [](RdmaArgs& a) { a.mtu = "8192"; }},
      {"--mtu",
       [](RdmaArgs& a) {
         a.mtu = "1024";
         a.cm = true;
       }},
      {"--device", [](RdmaArgs& a) { a.device = ""; }},
      {"--remote-device", [](RdmaArgs& a) { a.remote_device = ""; }},
      {"--device",
       [](RdmaArgs& a) {
         a.device = "rxe0";
         a.cm = true;
       }},
      {"--ib-port", [](RdmaArgs& a) { a.ib_port = "0"; }},
      {"--port", [](RdmaArgs& a) { a.port = "0"; }},
      {"--port", [](RdmaArgs& a) { a.port = "70000"; }},
      {"--gpu", [](RdmaArgs& a) { a.gpu = "-1"; }},
      {"--gpu",
       [](RdmaArgs& a) {
         a.gpu = "0";
         a.op = "write";
       },
       RdmaTest::kLatency},
      {"--min-bw", [](RdmaArgs& a) { a.min_bw = "0"; }},
      {"--min-bw", [](RdmaArgs& a) { a.min_bw = "fast"; }},
      {"--min-bw-pct", [](RdmaArgs& a) { a.min_bw_pct = "101"; }},
      {"--min-bw-pct",
       [](RdmaArgs& a) {
         a.min_bw = "10";
         a.min_bw_pct = "50";
       }},
      {"--timeout", [](RdmaArgs& a) { a.timeout = "10ms"; }},
      {"--timeout", [](RdmaArgs& a) { a.timeout = "2h"; }},
  };
  for (const auto& c : cases) {
    RdmaArgs a = args_for();
    c.set(a);
    auto o = make_rdma_options(c.test, a);
    ASSERT_FALSE(o.ok()) << "accepted a bad " << c.flag;
    EXPECT_EQ(exit_status_for(o.error().code()), kExitUsage) << o.error().message();
    EXPECT_EQ(o.error().message().rfind(std::string(c.flag) + ":", 0), 0u)
        << "expected the message to start with " << c.flag << ": " << o.error().message();
  }
}

TEST(RdmaOptions, ParamsRoundTrip) {
  RdmaArgs a = args_for();
  a.op = "send";
  a.sweep = "2:8";
  a.qps = "2";
  a.bidir = true;
  a.iters = "77";
  a.tclass = "96";
  a.mtu = "2048";
  a.remote_gid_index = "3";
  a.remote_device = "rxe1";
  a.min_bw = "12.5";
  a.timeout = "4s";
  auto o = make_rdma_options(RdmaTest::kBandwidth, a);
  ASSERT_TRUE(o.ok()) << o.error().message();
  auto doc = json::parse(rdma_params_json(*o), "params");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  auto back = rdma_options_from_params(RdmaTest::kBandwidth, *doc);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->op, RdmaOp::kSend);
  EXPECT_EQ(back->sizes, (std::vector<uint64_t>{2, 4, 8}));
  EXPECT_EQ(back->qps, 2u);
  EXPECT_TRUE(back->bidir);
  EXPECT_EQ(back->iters, 77u);
  EXPECT_EQ(back->traffic_class, 96);
  EXPECT_EQ(back->mtu, 2048u);
  EXPECT_EQ(back->remote_gid_index, 3u);
  EXPECT_EQ(back->remote_device, "rxe1");
  EXPECT_EQ(back->min_bw_gbps, 12.5);
  EXPECT_EQ(back->timeout, 4s);
  // The agent uses the client's remote_* choices as its own.
  RdmaServerView view = server_view(*back);
  EXPECT_EQ(view.device, "rxe1");
  EXPECT_EQ(view.gid_index, 3u);

  a = args_for();
  a.duration = "1.5s";
  auto timed = make_rdma_options(RdmaTest::kBandwidth, a);
  ASSERT_TRUE(timed.ok());
  auto tdoc = json::parse(rdma_params_json(*timed), "params");
  ASSERT_TRUE(tdoc.ok());
  auto tback = rdma_options_from_params(RdmaTest::kBandwidth, *tdoc);
  ASSERT_TRUE(tback.ok()) << tback.error().message();
  EXPECT_EQ(tback->iters, 0u);
  EXPECT_EQ(tback->duration, std::chrono::nanoseconds(1500ms));
}

// The params come from the network: checked as strictly, errors name the field.
TEST(RdmaOptions, ParamsFromThePeerAreChecked) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"op":"atomic"})", "params.op"},
      {R"({"sizes":[64,32]})", "params.sizes[1]"},
      {R"({"sizes":[0]})", "params.sizes[0]"},
      {R"({"sizes":"big"})", "params.sizes"},
      {R"({"qps":0})", "params.qps"},
      {R"({"qps":1000})", "params.qps"},
      {R"({"mtu":1500})", "params.mtu"},
      {R"({"iters":10,"duration_s":1})", "params.duration_s"},
      {R"({"duration_s":-1})", "params.duration_s"},
      {R"({"tx_depth":"deep"})", "params.tx_depth"},
      {R"({"gid_index":1,"cm":true})", "params.gid_index"},
      {R"({"gid_index":300})", "params.gid_index"},
      {R"({"timeout_ms":5})", "params.timeout_ms"},
      {R"([1,2])", "params"},
  };
  for (const auto& [text, field] : cases) {
    auto doc = json::parse(text, "params");
    ASSERT_TRUE(doc.ok()) << text;
    auto o = rdma_options_from_params(RdmaTest::kBandwidth, *doc);
    ASSERT_FALSE(o.ok()) << "accepted " << text;
    EXPECT_EQ(o.error().message().rfind(field, 0), 0u)
        << text << " -> " << o.error().message() << " (expected " << field << ")";
  }
}

// Through the real command line: usage errors exit 1 and name the flag on stderr.
TEST(RdmaOptions, CommandLineUsageErrorsExitOne) {
  const std::vector<std::vector<std::string>> cases = {
      {"bw", "10.0.0.2", "--mtu", "1500"},  {"bw", "10.0.0.2", "--qps", "0"},
      {"bw", "10.0.0.2", "--sweep", "3:7"}, {"lat", "10.0.0.2", "--op", "atomic"},
      {"lat", "10.0.0.2", "--bidir"},       {"bw"},
  };
  for (auto args : cases) {
    std::string flag = args.size() > 2 ? args[2] : "HOST";
    args.insert(args.begin(), FABRIC_PROBE_BINARY);
    auto r = run_subprocess(args);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->exit_status, 1) << r->stderr_text;
    EXPECT_NE(r->stderr_text.find(flag), std::string::npos) << r->stderr_text;
    EXPECT_TRUE(r->stdout_text.empty()) << r->stdout_text;
  }
}

// Nothing listens on the agent port: exit 2 with the command that starts an agent.
TEST(RdmaOptions, CommandLineWithoutAnAgent) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd); // bound, never listening: the port refuses connections
  for (const char* test : {"bw", "lat"}) {
    auto r = run_subprocess({FABRIC_PROBE_BINARY, test, "127.0.0.1", "-p",
                             std::to_string(ntohs(a.sin_port)), "--timeout", "2s"});
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->exit_status, 2) << r->stderr_text;
    EXPECT_NE(r->stderr_text.find("no fabric-probe agent listening"), std::string::npos)
        << r->stderr_text;
    EXPECT_NE(r->stderr_text.find("fabric-probe server"), std::string::npos) << r->stderr_text;
  }
}

} // namespace
} // namespace fabric::probes
