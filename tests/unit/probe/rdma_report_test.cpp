// The bw / lat reports: the JSON a script reads (compared as parsed documents), the text
// table a person reads, and the bandwidth floor.
#include <gtest/gtest.h>

#include "common/json.h"
#include "probes/rdma/rdma_report.h"

namespace fabric::probes {
namespace {

RdmaConnectionInfo connection() {
  RdmaConnectionInfo c;
  c.method = "oob";
  c.mtu = 1024;
  c.traffic_class = 104;
  c.max_inline = 220;
  c.local.gid.rdma_device = "rxe0";
  c.local.gid.port = 1;
  c.local.gid.gid_index = 1;
  c.local.gid.gid = "::ffff:10.77.0.12";
  c.local.gid.type = rdma::GidType::kRoceV2;
  c.local.gid.netdev = "eth0";
  c.local.gid.ipv4 = "10.77.0.12";
  c.local.active_mtu = 1024;
  c.remote = c.local;
  c.remote.gid.gid = "::ffff:10.77.0.11";
  c.remote.gid.ipv4 = "10.77.0.11";
  return c;
}

RdmaBwReport bw_report(bool bidir) {
  RdmaBwReport r;
  r.agent = {"10.77.0.11:18515", "node1", "fabric-probe 0.1.0"};
  RdmaArgs a;
  a.host = "10.77.0.11";
  a.sweep = "4K:64K";
  a.iters = "1000";
  a.bidir = bidir;
  r.options = *make_rdma_options(RdmaTest::kBandwidth, a);
  r.options.sizes = {4096, 65536};
  r.connection = connection();
  // 4 MB in 0.1 s and 64 MB in 0.5 s: 40 MB/s (0.32 Gb/s) and 128 MB/s (1.024 Gb/s).
  BwSizeResult small{4096, 1000, {1000, 4096000, 0.1, 5e7}, std::nullopt};
  BwSizeResult large{65536, 1000, {1000, 65536000, 0.5, 1.5e8}, std::nullopt};
  if (bidir) {
    small.remote = SideStats{1000, 4096000, 0.1, 5e7};
    large.remote = SideStats{1000, 65536000, 0.25, 3e8};
  }
  r.results = {small, large};
  r.link_speed_gbps = 2.5;
  CounterDelta d;
  d.seconds = 0.6;
  d.values = {{"hw.sent_pkts", 68000}, {"hw.rcvd_pkts", 68000}, {"port.xmit_bytes", 70000000}};
  r.counters.local = d;
  return r;
}

rapidjson::Document parse(const std::string& text) {
  auto doc = json::parse(text, "report");
  EXPECT_TRUE(doc.ok()) << text;
  return std::move(*doc);
}

TEST(RdmaReport, BandwidthJsonUsesTheLargestSizeAsHeadline) {
  auto doc = parse(render_rdma_bw_json(bw_report(false)));
  EXPECT_EQ(doc["schema_version"].GetInt(), 1);
  EXPECT_STREQ(doc["test"].GetString(), "rdma_bw");
  EXPECT_STREQ(doc["agent"].GetString(), "10.77.0.11:18515");
  EXPECT_STREQ(doc["params"]["op"].GetString(), "write");
  EXPECT_EQ(doc["params"]["iters"].GetUint64(), 1000u);
  EXPECT_STREQ(doc["connection"]["method"].GetString(), "oob");
  EXPECT_EQ(doc["connection"]["mtu_bytes"].GetUint(), 1024u);
  EXPECT_EQ(doc["connection"]["traffic_class"].GetUint(), 104u);
  EXPECT_STREQ(doc["connection"]["local"]["gid"].GetString(), "::ffff:10.77.0.12");
  EXPECT_STREQ(doc["connection"]["local"]["gid_type"].GetString(), "RoCE v2");
  EXPECT_STREQ(doc["connection"]["remote"]["ipv4"].GetString(), "10.77.0.11");
  EXPECT_STREQ(doc["connection"]["local"]["memory"].GetString(), "host");
  EXPECT_DOUBLE_EQ(doc["link_speed_gbps"].GetDouble(), 2.5);

  const auto& results = doc["results"];
  ASSERT_EQ(results.Size(), 2u);
  EXPECT_EQ(results[0]["size_bytes"].GetUint64(), 4096u);
  EXPECT_EQ(results[0]["iterations"].GetUint64(), 1000u);
  EXPECT_EQ(results[0]["bytes"].GetUint64(), 4096000u);
  EXPECT_NEAR(results[0]["avg_gbps"].GetDouble(), 0.32768, 1e-9);
  EXPECT_NEAR(results[0]["avg_gbytes_per_s"].GetDouble(), 0.04096, 1e-9);
  EXPECT_NEAR(results[0]["peak_gbps"].GetDouble(), 0.4, 1e-9);
  EXPECT_NEAR(results[0]["msg_rate_mpps"].GetDouble(), 0.01, 1e-12);
  EXPECT_FALSE(results[0].HasMember("remote_avg_gbps"));

  // summary: the largest size, 65.536 MB in 0.5 s.
  const auto& s = doc["summary"];
  EXPECT_EQ(s["size_bytes"].GetUint64(), 65536u);
  EXPECT_NEAR(s["avg_gbps"].GetDouble(), 1.048576, 1e-9);
  EXPECT_NEAR(s["avg_gbytes_per_s"].GetDouble(), 0.131072, 1e-9);
  EXPECT_NEAR(s["peak_gbps"].GetDouble(), 1.2, 1e-9);

  EXPECT_EQ(doc["counters"]["local"]["hw"]["sent_pkts"].GetUint64(), 68000u);
  EXPECT_EQ(doc["counters"]["local"]["port"]["xmit_bytes"].GetUint64(), 70000000u);
  EXPECT_TRUE(doc["counters"]["remote"].IsNull());
  EXPECT_FALSE(doc.HasMember("threshold"));
}

TEST(RdmaReport, BothDirectionsAreSummed) {
  auto doc = parse(render_rdma_bw_json(bw_report(true)));
  const auto& large = doc["results"][1];
  // 131 MB/s from this side plus 262 MB/s from the agent.
  EXPECT_NEAR(large["local_avg_gbps"].GetDouble(), 1.048576, 1e-9);
  EXPECT_NEAR(large["remote_avg_gbps"].GetDouble(), 2.097152, 1e-9);
  EXPECT_NEAR(large["avg_gbps"].GetDouble(), 3.145728, 1e-9);
  EXPECT_EQ(large["messages"].GetUint64(), 2000u);
  EXPECT_EQ(large["bytes"].GetUint64(), 131072000u);
  EXPECT_TRUE(doc["params"]["bidir"].GetBool());
  EXPECT_NEAR(doc["summary"]["avg_gbps"].GetDouble(), 3.145728, 1e-9);
}

TEST(RdmaReport, BandwidthTextShowsBothUnitsAndCounters) {
  std::string text = render_rdma_bw_text(bw_report(false));
  for (const char* want :
       {"rdma_bw write with 10.77.0.11:18515", "#bytes", "avg Gb/s", "avg GB/s", "Mpps", "65536",
        "1.049", "0.1311", "Gb/s = 1e9 bit/s", "RoCE v2 GID index 1", "link speed: 2.5 Gb/s",
        "counters on this side:", "counters on the agent's side:", "(not available)",
        "traffic class 104"}) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing '" << want << "' in\n" << text;
  }
}

TEST(RdmaReport, LatencyJsonAndText) {
  RdmaLatReport r;
  r.agent = {"10.77.0.11:18515", "node1", "fabric-probe 0.1.0"};
  RdmaArgs a;
  a.host = "10.77.0.11";
  a.sweep = "2:4";
  a.op = "read";
  r.options = *make_rdma_options(RdmaTest::kLatency, a);
  r.connection = connection();
  r.results = {{2, 1000, summarize({3.0, 1.0, 2.0, 4.0})}, {4, 1000, summarize({5.0, 6.0})}};
  auto doc = parse(render_rdma_lat_json(r));
  EXPECT_STREQ(doc["test"].GetString(), "rdma_lat");
  EXPECT_STREQ(doc["latency"].GetString(), "rtt");
  ASSERT_EQ(doc["results"].Size(), 2u);
  EXPECT_DOUBLE_EQ(doc["results"][0]["min_us"].GetDouble(), 1.0);
  EXPECT_DOUBLE_EQ(doc["results"][0]["max_us"].GetDouble(), 4.0);
  EXPECT_DOUBLE_EQ(doc["results"][0]["p50_us"].GetDouble(), 2.0);
  EXPECT_DOUBLE_EQ(doc["results"][0]["mean_us"].GetDouble(), 2.5);
  // summary: the smallest size.
  EXPECT_EQ(doc["summary"]["size_bytes"].GetUint64(), 2u);
  EXPECT_DOUBLE_EQ(doc["summary"]["p50_us"].GetDouble(), 2.0);
  EXPECT_FALSE(doc["params"].HasMember("tx_depth"));

  std::string text = render_rdma_lat_text(r);
  for (const char* want : {"rdma_lat read", "whole read (round trip)", "p99.9", "stdev", "2.00"}) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing '" << want << "' in\n" << text;
  }
  EXPECT_EQ(latency_kind(RdmaOp::kSend), "rtt/2");
  EXPECT_EQ(latency_kind(RdmaOp::kWrite), "rtt/2");
}

TEST(RdmaReport, BandwidthFloor) {
  RdmaBwReport r = bw_report(false);
  // No floor asked for: nothing to evaluate.
  auto none = evaluate_threshold(r.options, r.results, r.link_speed_gbps);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  r.options.min_bw_gbps = 1.0; // the largest size did 1.048576 Gb/s
  auto pass = evaluate_threshold(r.options, r.results, r.link_speed_gbps);
  ASSERT_TRUE(pass.ok() && pass->has_value());
  EXPECT_TRUE((*pass)->passed);
  r.options.min_bw_gbps = 1.1;
  auto fail = evaluate_threshold(r.options, r.results, r.link_speed_gbps);
  ASSERT_TRUE(fail.ok() && fail->has_value());
  EXPECT_FALSE((*fail)->passed);
  Error e = below_threshold_error(**fail, 1.048576);
  EXPECT_EQ(exit_status_for(e.code()), kExitBelowThreshold);
  EXPECT_NE(e.message().find("1.049 Gb/s, below the required 1.100 Gb/s"), std::string::npos)
      << e.message();

  // 50% of 2.5 Gb/s is 1.25: missed; 40% is 1.0: met.
  r.options.min_bw_gbps.reset();
  r.options.min_bw_pct = 50;
  auto pct = evaluate_threshold(r.options, r.results, r.link_speed_gbps);
  ASSERT_TRUE(pct.ok() && pct->has_value());
  EXPECT_DOUBLE_EQ((*pct)->required_gbps, 1.25);
  EXPECT_FALSE((*pct)->passed);
  r.options.min_bw_pct = 40;
  EXPECT_TRUE((*evaluate_threshold(r.options, r.results, r.link_speed_gbps))->passed);
  auto unknown = evaluate_threshold(r.options, r.results, std::nullopt);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kUnsupported);

  r.threshold = *pct;
  auto doc = parse(render_rdma_bw_json(r));
  EXPECT_FALSE(doc["threshold"]["passed"].GetBool());
  EXPECT_DOUBLE_EQ(doc["threshold"]["required_gbps"].GetDouble(), 1.25);
  EXPECT_DOUBLE_EQ(doc["threshold"]["min_pct"].GetDouble(), 50.0);
  EXPECT_TRUE(doc["threshold"]["min_gbps"].IsNull());
}

TEST(RdmaReport, CountersTravelAsJsonAndBack) {
  CounterDelta d;
  d.seconds = 2.5;
  d.values = {{"port.xmit_bytes", 1ull << 40}, {"hw.rcvd_pkts", 7}, {"eth.rx_prio3_pause", 0}};
  d.notes = {"no PMA counters"};
  json::Writer w(false);
  write_counters_json(w, d);
  auto doc = parse(w.str());
  auto back = parse_counters_json(doc, "counters");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->values, d.values);
  EXPECT_DOUBLE_EQ(back->seconds, 2.5);
  EXPECT_EQ(back->notes, d.notes);

  auto bad = parse(R"({"seconds":1,"hw":{"rcvd_pkts":-4}})");
  auto refused = parse_counters_json(bad, "counters");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message().rfind("counters.hw.rcvd_pkts", 0), 0u)
      << refused.error().message();
}

} // namespace
} // namespace fabric::probes
