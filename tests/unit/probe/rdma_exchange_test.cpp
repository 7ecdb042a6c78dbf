// The RDMA tests' messages after the welcome: what each side tells the other about its QPs,
// buffer and GID, and the run/done messages, including what a bad peer may send.
#include <gtest/gtest.h>

#include "common/json.h"
#include "probes/rdma/rdma_exchange.h"

namespace fabric::probes {
namespace {

RdmaEndpoint sample_endpoint() {
  RdmaEndpoint e;
  e.gid.rdma_device = "mlx5_0";
  e.gid.port = 1;
  e.gid.gid_index = 3;
  e.gid.gid = "::ffff:10.0.0.1";
  e.gid.netdev = "eth0";
  e.gid.type = rdma::GidType::kRoceV2;
  e.gid.ipv4 = "10.0.0.1";
  e.gid.peer_ipv4 = "10.0.0.2";
  e.gid.reason = "route";
  e.lid = 0;
  e.active_mtu = 4096;
  e.mtu = 1024;
  e.max_rd_atomic = 16;
  e.rkey = 0xdeadbeef;
  e.region_bytes = 65536;
  e.max_inline = 220;
  e.gpu_memory = true;
  e.qps = {{0x11, 0xabcdef, 0x7f0000001000}, {0xffffff, 0, 0x7f0000021000}};
  return e;
}

rapidjson::Document parse(const std::string& text) {
  auto doc = json::parse(text, "message");
  EXPECT_TRUE(doc.ok()) << text;
  return std::move(*doc);
}

TEST(RdmaExchange, EndpointRoundTrip) {
  RdmaEndpoint e = sample_endpoint();
  auto back = decode_endpoint(parse(encode_endpoint(e)), 2);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->gid.gid, e.gid.gid);
  EXPECT_EQ(back->gid.gid_index, 3u);
  EXPECT_EQ(back->gid.type, rdma::GidType::kRoceV2);
  EXPECT_EQ(back->gid.peer_ipv4, "10.0.0.2");
  EXPECT_EQ(back->active_mtu, 4096u);
  EXPECT_EQ(back->mtu, 1024u);
  EXPECT_EQ(back->max_rd_atomic, 16u);
  EXPECT_EQ(back->rkey, 0xdeadbeefu);
  EXPECT_EQ(back->region_bytes, 65536u);
  EXPECT_EQ(back->max_inline, 220u);
  EXPECT_TRUE(back->gpu_memory);
  EXPECT_EQ(back->cm_port, 0);
  ASSERT_EQ(back->qps.size(), 2u);
  EXPECT_EQ(back->qps[0].qpn, 0x11u);
  EXPECT_EQ(back->qps[0].psn, 0xabcdefu);
  EXPECT_EQ(back->qps[0].addr, 0x7f0000001000u);
  EXPECT_EQ(back->qps[1].qpn, 0xffffffu);

  e.cm_port = 40000;
  auto cm = decode_endpoint(parse(encode_endpoint(e)), 2);
  ASSERT_TRUE(cm.ok());
  EXPECT_EQ(cm->cm_port, 40000);
}

TEST(RdmaExchange, RefusesBadEndpoints) {
  const std::string good = encode_endpoint(sample_endpoint());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    return text;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with("\"qpn\":17", "\"qpn\":16777216"), "endpoint.qps[0].qpn"},
      {with("\"psn\":11259375", "\"psn\":-1"), "endpoint.qps[0].psn"},
      {with("\"active_mtu\":4096", "\"active_mtu\":1500"), "endpoint.active_mtu"},
      {with("\"mtu\":1024", "\"mtu\":9000"), "endpoint.mtu"},
      {with("\"rkey\":3735928559", "\"rkey\":\"key\""), "endpoint.rkey"},
      {with("\"type\":\"RoCE v2\"", "\"type\":\"RoCE v9\""), "endpoint.gid.type"},
      {with("\"gid\":\"::ffff:10.0.0.1\"", "\"gid\":\"not-a-gid\""), "endpoint.gid.gid"},
      {with("\"type\":\"rdma_endpoint\"", "\"type\":\"rdma_run\""), "message.type"},
  };
  for (const auto& [text, field] : cases) {
    auto r = decode_endpoint(parse(text), 2);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message().rfind(field, 0), 0u) << field << ": " << r.error().message();
  }
  // One QP more or less than the test uses.
  auto count = decode_endpoint(parse(good), 4);
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.error().message().find("the test uses 4"), std::string::npos)
      << count.error().message();
}

TEST(RdmaExchange, RunAndDoneMessages) {
  auto run = decode_run(parse(encode_run({65536, 5000, 0})));
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(run->size, 65536u);
  EXPECT_EQ(run->iters, 5000u);
  EXPECT_EQ(run->duration_s, 0.0);
  auto timed = decode_run(parse(encode_run({8, 0, 2.5})));
  ASSERT_TRUE(timed.ok()) << timed.error().message();
  EXPECT_EQ(timed->iters, 0u);
  EXPECT_EQ(timed->duration_s, 2.5);
  EXPECT_FALSE(decode_run(parse(R"({"type":"rdma_run","size":0,"iters":1})")).ok());
  EXPECT_FALSE(decode_run(parse(R"({"type":"rdma_run","size":8})")).ok());
  EXPECT_FALSE(decode_run(parse(R"({"type":"rdma_run","size":8,"duration_s":-2})")).ok());

  SideStats s{1000, 65536000, 1.25, 6e7};
  auto done = decode_done(parse(encode_done(s)));
  ASSERT_TRUE(done.ok()) << done.error().message();
  EXPECT_EQ(done->messages, 1000u);
  EXPECT_EQ(done->bytes, 65536000u);
  EXPECT_DOUBLE_EQ(done->seconds, 1.25);
  EXPECT_DOUBLE_EQ(done->peak_bytes_per_s, 6e7);

  auto result = parse(encode_result(R"({"seconds":1,"port":{},"hw":{},"eth":{},"notes":[]})"));
  EXPECT_STREQ(result["type"].GetString(), "result");
  EXPECT_TRUE(result["counters"].IsObject());
  EXPECT_TRUE(parse(encode_result("null"))["counters"].IsNull());
  EXPECT_STREQ(parse(encode_simple(kMsgReady))["type"].GetString(), "rdma_ready");
}

TEST(RdmaExchange, BothSidesAgreeOnTheSmallestMtu) {
  RdmaEndpoint a, b;
  a.active_mtu = 4096;
  b.active_mtu = 1024;
  EXPECT_EQ(agreed_mtu(a, b), 1024u);
  EXPECT_EQ(agreed_mtu(b, a), 1024u);
  // --mtu is taken as asked, also above a port's MTU (check_path_mtu() refuses that).
  a.mtu = 2048;
  EXPECT_EQ(agreed_mtu(a, b), 2048u);
  EXPECT_EQ(agreed_mtu(b, a), 2048u);
  b.mtu = 512;
  EXPECT_EQ(agreed_mtu(a, b), 512u);
  EXPECT_EQ(agreed_mtu(b, a), 512u);
  EXPECT_TRUE(is_rdma_mtu(256));
  EXPECT_FALSE(is_rdma_mtu(1500));
}

} // namespace
} // namespace fabric::probes
