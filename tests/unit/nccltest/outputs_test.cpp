// The files a run writes: nccl-tests' JSON (version 3 layout, filtered environment, our
// "fabric" object), Prometheus text (checked by the real promtool), the SVG plot; and the
// footer's threshold arithmetic.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "common/json.h"
#include "common/subprocess.h"
#include "nccltest/env_filter.h"
#include "nccltest/outputs.h"
#include "nccltest/summary.h"
#include "nccltest/sweep.h"

namespace fabric::nccltest {
namespace {

SizeRow row(std::size_t bytes, double busbw, std::optional<int64_t> wrong = 0) {
  SizeRow r;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.op = "sum";
  r.out_of_place = {10.0, busbw / 1.5, busbw, wrong, {9.5, 10.5}};
  r.in_place = {9.0, busbw / 1.4, busbw * 1.1, wrong, {8.5, 9.5}};
  return r;
}

RunRecord sample_record() {
  RunRecord r;
  r.collective = "all_reduce";
  r.header.program = "all_reduce_perf";
  r.header.backend = "mpi";
  r.header.launcher = "mpirun";
  r.header.min_bytes = 1024;
  r.header.max_bytes = 128u << 20;
  r.header.step_factor = 2;
  r.header.iters = 20;
  r.header.warmup_iters = 1;
  r.header.check_iters = 1;
  r.header.nodes = 2;
  for (int i = 0; i < 2; ++i) {
    RankInfo info;
    info.rank = i;
    info.pid = 100 + i;
    info.host = i == 0 ? "node1" : "node2";
    info.device = -1;
    info.pci_bus_id = "host";
    info.device_name = "host memory";
    info.nic = NicInfo{"mlx5_0/1", "RDMA port rate", 100};
    r.header.ranks.push_back(info);
  }
  r.rows = {row(1024, 0.5), row(64u << 20, 10.0), row(128u << 20, 11.0, std::nullopt)};
  r.footer.line_rate.ceiling_gbytes = 12.5;
  r.footer.line_rate.basis = "slowest node node2: 1 NIC, 100 Gb/s in all";
  r.footer.threshold.min_busbw = 5;
  apply_threshold(r.footer, r.rows);
  r.args = {"fabric-nccltest", "-b", "1K"};
  r.env = {"NCCL_IB_HCA=mlx5_0"};
  r.start_time = "2025-01-01 00:00:00";
  r.end_time = "2025-01-01 00:01:00";
  return r;
}

TEST(JsonReport, KeepsNcclTestsVersion3LayoutAndAddsFabric) {
  auto doc = json::parse(render_json_report(sample_record()), "report");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  const std::vector<std::string> expected_keys = {
      "version", "start_time",    "args",
      "env",     "nccl_version",  "config",
      "results", "out_of_bounds", "average_bus_bandwidth",
      "errors",  "fabric",        "end_time"};
  std::vector<std::string> keys;
  for (auto& m : doc->GetObject())
    keys.emplace_back(m.name.GetString());
  EXPECT_EQ(keys, expected_keys);
  EXPECT_EQ((*doc)["version"].GetInt(), 3);
  const auto& config = (*doc)["config"];
  EXPECT_EQ(config["step_factor"].GetUint64(), 2u);
  EXPECT_STREQ(config["blocking_collectives"].GetString(), "false"); // strings, as nccl-tests
  EXPECT_EQ(config["devices"].Size(), 2u);
  EXPECT_STREQ(config["devices"][1]["hostname"].GetString(), "node2");
  const auto& first = (*doc)["results"][0];
  EXPECT_STREQ(first["root"].GetString(), "    -1");
  EXPECT_DOUBLE_EQ(first["out_of_place"]["bus_bw"].GetDouble(), 0.5);
  EXPECT_DOUBLE_EQ(first["out_of_place"]["nwrong"].GetDouble(), 0.0);
  EXPECT_TRUE((*doc)["results"][2]["in_place"]["nwrong"].IsNull()); // not checked
  EXPECT_EQ(first["actual_iterations"].GetInt(), 20);
  EXPECT_STREQ((*doc)["out_of_bounds"]["okay"].GetString(), "true");
  EXPECT_STREQ((*doc)["average_bus_bandwidth"]["okay"].GetString(), "true");
  const auto& fabric = (*doc)["fabric"];
  EXPECT_EQ(fabric["schema_version"].GetInt(), json::kSchemaVersion);
  EXPECT_DOUBLE_EQ(fabric["results"][1]["out_of_place"]["rank_time_us"][1].GetDouble(), 10.5);
  EXPECT_DOUBLE_EQ(fabric["line_rate"]["ceiling_gbytes_per_s"].GetDouble(), 12.5);
  EXPECT_TRUE(fabric["ranks"][0]["topology"].IsNull());
  EXPECT_STREQ(fabric["ranks"][0]["nic"]["name"].GetString(), "mlx5_0/1");
  EXPECT_TRUE(fabric["watchdog"].IsNull());
  EXPECT_TRUE(fabric["threshold"]["okay"].GetBool());
}

TEST(JsonReport, WatchdogAndPairsGoUnderFabric) {
  RunRecord r = sample_record();
  HangReport hang;
  hang.timeout_s = 5;
  hang.cause = "rank 1 (node2, host memory) is behind every other rank: look there first";
  hang.waiting.push_back({1, {"node2", "host memory"}, "never reported", 6, true});
  hang.behind = {1};
  r.hang = hang;
  auto doc = json::parse(render_json_report(r), "report");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["errors"].Size(), 1u);
  EXPECT_EQ((*doc)["fabric"]["watchdog"]["behind"][0].GetInt(), 1);
  EXPECT_TRUE((*doc)["fabric"]["watchdog"]["waiting"][0]["behind"].GetBool());
}

TEST(EnvFilter, KeepsTheStackDropsSecretsAndEverythingElse) {
  auto kept = filter_environment(
      {"NCCL_IB_HCA=mlx5_0", "NCCL_IB_TC=106", "CUDA_VISIBLE_DEVICES=0,1", "UCX_TLS=rc",
       "OMPI_COMM_WORLD_RANK=3", "PMIX_RANK=3", "OMPI_MCA_orte_precondition_transports=abc",
       "PMIX_SECURITY_CREDENTIAL=munge", "NCCL_NET_PLUGIN_TOKEN=t0p", "UCX_PASSWORD=x",
       "CUDA_api_key=y", "AWS_SECRET_ACCESS_KEY=z", "HOME=/root", "PATH=/bin", "NCCL_DEBUG",
       "=weird"});
  EXPECT_EQ(kept, (std::vector<std::string>{"NCCL_IB_HCA=mlx5_0", "NCCL_IB_TC=106",
                                            "CUDA_VISIBLE_DEVICES=0,1", "UCX_TLS=rc",
                                            "OMPI_COMM_WORLD_RANK=3", "PMIX_RANK=3"}));
}

TEST(PromReport, PassesPromtoolWithBoundedLabels) {
  std::string text = render_prom_report(sample_record(), 1735689600);
  EXPECT_NE(text.find("fabric_nccltest_bus_bandwidth_bytes_per_second{collective=\"all_reduce\","
                      "backend=\"mpi\",nranks=\"2\",size_bucket=\"67108864\",placement="
                      "\"out_of_place\"} 1e+10"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("fabric_nccltest_line_rate_ceiling_bytes_per_second{collective=\"all_reduce\","
                "backend=\"mpi\",nranks=\"2\"} 1.25e+10"),
      std::string::npos);
  EXPECT_NE(
      text.find(
          "fabric_nccltest_success{collective=\"all_reduce\",backend=\"mpi\",nranks=\"2\"} 1"),
      std::string::npos);
  auto promtool = run_subprocess({"promtool", "check", "metrics"}, {text, std::nullopt});
  if (!promtool.ok() && promtool.error().code() == ErrorCode::kNotFound) {
    GTEST_SKIP() << "promtool is not installed (scripts/setup.sh installs prometheus)";
  }
  ASSERT_TRUE(promtool.ok()) << promtool.error().message();
  EXPECT_EQ(promtool->exit_status, 0) << promtool->stdout_text << promtool->stderr_text;
}

TEST(PromReport, RowsSharingABucketAreAveragedNotDuplicated) {
  RunRecord r = sample_record();
  r.rows = {row(1000, 2.0), row(1020, 4.0)}; // both in the 512 bucket
  std::string text = render_prom_report(r, 0);
  std::size_t n = 0;
  for (std::size_t at = 0; (at = text.find("size_bucket=\"512\",placement=\"out_of_place\"} ",
                                           at)) != std::string::npos;
       ++at) {
    ++n;
  }
  EXPECT_EQ(n, 4u); // one sample per family that has per-size series
  EXPECT_NE(text.find("bus_bandwidth_bytes_per_second{collective=\"all_reduce\",backend=\"mpi\","
                      "nranks=\"2\",size_bucket=\"512\",placement=\"out_of_place\"} 3e+09"),
            std::string::npos)
      << text;
}

TEST(BusbwPlot, IsAStandaloneSvgWithTheCeiling) {
  std::string svg = render_busbw_plot(sample_record());
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos); // the line-rate ceiling
  EXPECT_NE(svg.find("line rate 12.5 GB/s"), std::string::npos);
  EXPECT_NE(svg.find("float sum out-of-place"), std::string::npos);
  EXPECT_NE(svg.find("float sum in-place"), std::string::npos);
  EXPECT_NE(svg.find("<title>float sum out-of-place: 64 MiB, 10 GB/s</title>"), std::string::npos);
  EXPECT_EQ(svg.find("script"), std::string::npos);
  auto xml = run_subprocess(
      {"python3", "-c", "import sys,xml.dom.minidom as m; m.parseString(sys.stdin.read())"},
      {svg, std::nullopt});
  if (xml.ok()) {
    EXPECT_EQ(xml->exit_status, 0) << xml->stderr_text;
  }
}

// The demo's case: 0.03 GB/s measured under a 0.3125 GB/s line rate. The axis follows the
// data (its top tick 0.03), and the line rate is named above it instead of squashing the
// curve.
TEST(BusbwPlot, AxisFollowsTheDataWhenTheLineRateIsFarAbove) {
  RunRecord r = sample_record();
  r.rows = {row(1024, 0.01), row(4u << 20, 0.03 / 1.1)};
  r.footer.line_rate.ceiling_gbytes = 0.3125;
  std::string svg = render_busbw_plot(r);
  EXPECT_NE(svg.find(">0.03</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(">0.3</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find("line rate 0.3125 GB/s, above this scale"), std::string::npos) << svg;
}

TEST(Summary, ThresholdIsJudgedOnLargeSizes) {
  std::vector<SizeRow> rows = {row(1024, 0.5), row(64u << 20, 10.0), row(128u << 20, 12.0)};
  RunFooter f;
  f.threshold.min_busbw = 10.5;
  apply_threshold(f, rows);
  EXPECT_NEAR(f.avg_busbw, (0.5 + 0.55 + 10 + 11 + 12 + 13.2) / 6, 1e-9);
  EXPECT_NEAR(*f.judged_busbw, (10 + 11 + 12 + 13.2) / 4, 1e-9);
  EXPECT_EQ(f.judged_on, "sizes >= 64 MiB");
  EXPECT_EQ(f.threshold_ok, true);
  f.threshold.min_busbw = 12;
  apply_threshold(f, rows);
  EXPECT_EQ(f.threshold_ok, false);
  // NCCL_TESTS_MIN_BW as nccl-tests judges it: the average of every size (7.875, where the
  // sizes >= 64 MiB average 11.55) against 0.9 x the value.
  f.threshold.from_nccl_tests_env = true;
  f.threshold.min_busbw = 8.7; // 0.9 x 8.7 = 7.83
  apply_threshold(f, rows);
  EXPECT_EQ(f.judged_on, "every size, as nccl-tests judges NCCL_TESTS_MIN_BW");
  EXPECT_EQ(f.threshold_ok, true);
  f.threshold.min_busbw = 8.8;
  apply_threshold(f, rows);
  EXPECT_EQ(f.threshold_ok, false);
  EXPECT_EQ(run_exit_status(f, false, false), 3);
  RunFooter pct;
  pct.threshold.min_busbw_pct = 90;
  pct.line_rate.ceiling_gbytes = 12.5;
  apply_threshold(pct, rows);
  EXPECT_EQ(pct.threshold_ok, true); // 11.55 >= 11.25
  RunFooter small;
  small.threshold.min_busbw = 1;
  apply_threshold(small, {row(1024, 0.5)});
  EXPECT_EQ(small.judged_on, "every size (none reached 64 MiB)");
  EXPECT_EQ(small.threshold_ok, false);
  RunFooter none;
  apply_threshold(none, rows);
  EXPECT_FALSE(none.threshold_ok.has_value());
  EXPECT_EQ(nccl_tests_min_bw("12.5"), 12.5);
  EXPECT_FALSE(nccl_tests_min_bw("abc").has_value());
  EXPECT_FALSE(nccl_tests_min_bw(nullptr).has_value());
}

TEST(Summary, TheExitStatusSaysWhatFailed) {
  RunFooter clean;
  EXPECT_EQ(run_exit_status(clean, false, false), 0);
  EXPECT_EQ(run_exit_status(clean, false, true), 0) << "a socket fallback alone only warns";
  EXPECT_EQ(run_exit_status(clean, true, true), 3) << "--require-rdma";
  EXPECT_EQ(run_exit_status(clean, true, false), 0);
  RunFooter wrong;
  wrong.out_of_bounds = 1;
  EXPECT_EQ(run_exit_status(wrong, false, false), 3);
  RunFooter missed;
  missed.threshold_ok = false;
  EXPECT_EQ(run_exit_status(missed, false, false), 3);
  missed.threshold_ok = true;
  EXPECT_EQ(run_exit_status(missed, false, false), 0);
}

// -a as nccl-tests: 0 rank 0's time, 1 the mean, 2 the fastest rank, 3 the slowest.
TEST(Summary, TimeIsAggregatedOverRanksAsAverageSays) {
  const std::vector<double> times = {40, 10, 30, 20};
  EXPECT_EQ(aggregate_time(times, 0), 40);
  EXPECT_EQ(aggregate_time(times, 1), 25);
  EXPECT_EQ(aggregate_time(times, 2), 10);
  EXPECT_EQ(aggregate_time(times, 3), 40);
  EXPECT_EQ(aggregate_time({}, 1), 0);
}

} // namespace
} // namespace fabric::nccltest
