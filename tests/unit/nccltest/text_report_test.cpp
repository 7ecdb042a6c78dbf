// The text table against nccl-tests' own layout: tests/data/nccltest holds an
// all_reduce_perf output written from nccl-tests 2.19.6's format strings. Our rendering of
// the same numbers must be the same bytes, and the parsers in use must read ours as they
// read theirs.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/build_info.h"
#include "nccltest/text_report.h"
#include "tests/unit/nccltest/nccl_tests_parsers.h"

namespace fabric::nccltest {
namespace {

using testing::ParsedRun;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(FABRIC_TEST_DATA_DIR) + "/nccltest/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

SizeRow row_from(const testing::ParsedRow& p) {
  SizeRow row;
  row.bytes = static_cast<std::size_t>(p.size);
  row.count = static_cast<std::size_t>(p.count);
  row.type = DataType::kFloat;
  row.op = p.redop;
  row.root = p.root;
  row.out_of_place = {p.oop_time, p.oop_algbw, p.oop_busbw, std::stoll(p.oop_wrong), {}};
  row.in_place = {p.ip_time, p.ip_algbw, p.ip_busbw, std::stoll(p.ip_wrong), {}};
  return row;
}

RunHeader header_like_fixture() {
  RunHeader h;
  h.program = "all_reduce_perf";
  h.nccl_headers = 22807;
  h.nccl_library = 22807;
  h.min_bytes = 8;
  h.max_bytes = 134217728;
  h.step_factor = 2;
  h.warmup_iters = 1;
  h.iters = 20;
  h.check_iters = 1;
  h.backend = "nccl";
  h.backend_reason = "the default here: 8 CUDA devices visible";
  h.launcher = "mpirun";
  const char* buses[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
  for (int i = 0; i < 8; ++i) {
    RankInfo r;
    r.rank = i;
    r.pid = 2342117;
    r.host = "dgx-a07";
    r.device = i;
    r.pci_bus_id = std::string("0000:") + buses[i] + ":00";
    r.device_name = "NVIDIA H100 80GB HBM3";
    h.ranks.push_back(r);
  }
  return h;
}

TEST(NcclTestsText, RowsAreTheSameBytesAsNcclTests) {
  const std::string theirs = fixture("nccl_tests_all_reduce_8gpu.txt");
  ParsedRun parsed = testing::parse_fixed_13(theirs);
  ASSERT_EQ(parsed.rows.size(), 25u);
  std::vector<std::string> their_lines = testing::lines_of(theirs);
  std::size_t matched = 0;
  for (const auto& p : parsed.rows) {
    std::string ours = render_text_row(row_from(p));
    EXPECT_NE(std::find(their_lines.begin(), their_lines.end(), ours), their_lines.end())
        << "not in nccl-tests' output: [" << ours << "]";
    ++matched;
  }
  EXPECT_EQ(matched, 25u);
}

TEST(NcclTestsText, HeaderLinesMatchNcclTests) {
  const std::vector<std::string> theirs =
      testing::lines_of(fixture("nccl_tests_all_reduce_8gpu.txt"));
  const std::vector<std::string> ours =
      testing::lines_of(render_text_header(header_like_fixture()));
  // Our own first line (what ran), then "Collective test starting" and the parameter
  // lines, then (after our own '#' line) the devices and the three table-header lines, byte
  // for byte.
  ASSERT_GE(ours.size(), 16u);
  EXPECT_EQ(ours[0], "# fabric-nccltest " + std::string(build_info().version) +
                         " (nccl-tests 2.19.6 output), backend nccl, NCCL library 2.28.7 "
                         "(headers 2.28.7)\n");
  EXPECT_EQ(ours[1], theirs[1]);
  EXPECT_EQ(ours[2].substr(0, 18), theirs[2].substr(0, 18)); // nGpus differs: 1 per rank here
  EXPECT_EQ(ours[3].rfind("# fabric-nccltest: backend nccl, ", 0), 0u) << ours[3];
  for (std::size_t i = 0; i < 8; ++i)
    EXPECT_EQ(ours[ours.size() - 12 + i], theirs[5 + i]);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(ours[ours.size() - 4 + i], theirs[13 + i]) << "line " << i;
  }
}

// The fixture is nccl-tests' -g 8 from one process: with -g 8 ours is the same run, and its
// parameter line and device lines (one per rank and GPU, one pid) are the same bytes.
TEST(NcclTestsText, EightGpusFromOneProcessPrintNcclTestsParameterAndDeviceLines) {
  const std::vector<std::string> theirs =
      testing::lines_of(fixture("nccl_tests_all_reduce_8gpu.txt"));
  RunHeader h = header_like_fixture();
  h.ngpus = 8;
  h.launcher = "single process";
  const std::vector<std::string> ours = testing::lines_of(render_text_header(h));
  ASSERT_GE(ours.size(), 16u);
  EXPECT_EQ(ours[2], theirs[2]);
  for (std::size_t i = 0; i < 8; ++i)
    EXPECT_EQ(ours[ours.size() - 12 + i], theirs[5 + i]);
}

// -C, -S, -z and -u as nccl-tests 2.19.6 prints them: the expected lines come from its own
// format strings (src/util.cu's writeDeviceReport, writeResultHeader, writeTimestamp),
// copied here with the values it passes.
TEST(NcclTestsText, CputimeTimestampsBlockingAndUnalignAsNcclTestsPrintsThem) {
  RunHeader h = header_like_fixture();
  h.report_cputime = true;
  h.report_timestamps = true;
  h.unalign = 3;
  const std::vector<std::string> ours = testing::lines_of(render_text_header(h));
  char line[512];
  std::snprintf(line, sizeof line,
                "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d "
                "iters: %d agg iters: %d validation: %d graph: %d unalign: %d\n",
                1, 1, 8L, 134217728L, 2L, "factor", 1, 20, 1, 1, 0, 3);
  EXPECT_EQ(ours[2], line);
  std::snprintf(line, sizeof line,
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size",
                "count", "type", "redop", "root", "cputime", "algbw", "busbw", "#wrong", "cputime",
                "algbw", "busbw", "#wrong", 19, "timestamp");
  EXPECT_EQ(ours[ours.size() - 2], line);
  std::snprintf(line, sizeof line,
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "", 19, "%Y-%m-%d %H:%M:%S");
  EXPECT_EQ(ours.back(), line);
  // Blocking modes' lines follow the parameter line.
  const char* blocking[] = {
      "", "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n",
      "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n",
      "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes "
      "barrier \n"};
  for (int z = 1; z <= 3; ++z) {
    h.blocking = z;
    EXPECT_EQ(testing::lines_of(render_text_header(h))[3], blocking[z]) << "-z " << z;
  }
  // A row ends with the timestamp as "%21s".
  SizeRow row;
  row.bytes = 8;
  row.count = 2;
  row.op = "sum";
  row.out_of_place = {10.5, 0, 0, 0, {}};
  row.in_place = {10.5, 0, 0, 0, {}};
  row.timestamp = "2026-11-26 10:00:00";
  const std::string text = render_text_row(row);
  EXPECT_EQ(text.substr(text.size() - 22), "  2026-11-26 10:00:00\n");
  row.timestamp.clear();
  EXPECT_EQ(render_text_row(row).size(), text.size() - 21);
}

// -I 1 as nccl-tests 2.19.6 prints it: writeDeviceReport's per-iteration line and
// writeResultHeader's three lines with their format strings, copied with the values it
// passes; each row four 7-wide fields more after each placement's #wrong.
TEST(NcclTestsText, PerIterationHeaderAndColumnsAsNcclTestsPrintsThem) {
  RunHeader h = header_like_fixture();
  h.per_iteration = true;
  std::vector<std::string> ours = testing::lines_of(render_text_header(h));
  EXPECT_EQ(ours[3],
            "# Per-Iteration Report: CUDA event timing; i_* uses max over process rows \n");
  char line[1024];
  std::snprintf(line, sizeof line,
                "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)       "
                "                         in-place (+ per-iteration)\n",
                "", "", "", "", "");
  EXPECT_EQ(ours[ours.size() - 3], line);
  std::snprintf(line, sizeof line,
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  "
                "%6s  %6s  %7s  %7s  %7s  %7s %*s\n",
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                "i_min", "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong", "i_min",
                "i_max", "i_p99", "i_cv%", 0, "");
  EXPECT_EQ(ours[ours.size() - 2], line);
  std::snprintf(line, sizeof line,
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  "
                "%6s  %6s  %7s  %7s  %7s  %7s %*s\n",
                "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)",
                "(us)", "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", 0,
                "");
  EXPECT_EQ(ours.back(), line);
  // -K, on the mpi backend: the skip is said, and so is the clock that timed.
  h.per_iteration_skip = 2;
  h.backend = "mpi";
  h.blocking = 3;
  ours = testing::lines_of(render_text_header(h));
  EXPECT_EQ(ours[4], "# Per-Iteration Report: MPI_Wtime timing; i_* uses max over process rows; "
                     "summary skips first 2 iterations \n");

  SizeRow row;
  row.bytes = 8;
  row.count = 2;
  row.op = "sum";
  row.out_of_place = {10.5, 0, 0, 0, {}};
  row.in_place = {9.25, 0, 0, std::nullopt, {}};
  const std::string plain = render_text_row(row);
  PerIteration it;
  it.stats.min = 8.125;
  it.stats.max = 12345.678;
  it.stats.p99 = 11;
  it.stats.cv_pct = 3.5;
  row.out_of_place_iterations = it;
  it.stats.max = 123456789; // wider than 7 characters: fixed-point, wider
  row.in_place_iterations = it;
  const std::string text = render_text_row(row);
  char out_of_place[128], in_place[128];
  std::snprintf(out_of_place, sizeof out_of_place, "  %7s  %6s  %6s  %6g  %7s  %7s  %7s  %7s",
                "10.50", "0.00", "0.00", 0.0, "8.12", "12345.7", "11.00", "3.50");
  std::snprintf(in_place, sizeof in_place, "  %7s  %6s  %6s    N/A  %7s  %7s  %7s  %7s", "9.25",
                "0.00", "0.00", "8.12", "123456789", "11.00", "3.50");
  EXPECT_EQ(text, plain.substr(0, 52) + out_of_place + in_place + "\n");
  std::vector<std::string> fields;
  std::istringstream in(text);
  for (std::string f; in >> f;)
    fields.push_back(f);
  EXPECT_EQ(fields.size(), 5u + 2 * 8);
}

// Pasted into a ticket, an MPI run must not read as nccl-tests on some NCCL.
TEST(NcclTestsText, FirstLineSaysWhatRan) {
  RunHeader h = header_like_fixture();
  h.backend = "mpi";
  h.nccl_library = 0;
  h.nccl_headers = 22809;
  const std::string first = testing::lines_of(render_text_header(h))[0];
  EXPECT_EQ(first, "# fabric-nccltest " + std::string(build_info().version) +
                       " (nccl-tests 2.19.6 output), backend mpi, NCCL library none (headers "
                       "2.28.9)\n");
  EXPECT_EQ(first.find("nccl-tests version"), std::string::npos);
  EXPECT_EQ(nccl_version_text(22809), "2.28.9");
  EXPECT_EQ(nccl_version_text(21903), "2.19.3");
}

TEST(NcclTestsText, FooterLinesMatchNcclTests) {
  const std::vector<std::string> theirs =
      testing::lines_of(fixture("nccl_tests_all_reduce_8gpu.txt"));
  RunFooter footer;
  footer.avg_busbw = 145.825;
  footer.line_rate.basis = "all ranks on one node: no traffic crosses a NIC";
  const std::vector<std::string> ours =
      testing::lines_of(render_text_footer(footer, "all_reduce_perf"));
  const std::size_t n = theirs.size();
  EXPECT_EQ(ours[0], theirs[n - 6]); // Out of bounds values
  EXPECT_EQ(ours[1], theirs[n - 5]); // Avg bus bandwidth, with nccl-tests' trailing space
  EXPECT_EQ(ours[2].rfind("# Line-rate ceiling    : none (", 0), 0u);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_EQ(ours[3 + i], theirs[n - 4 + i]);
}

TEST(NcclTestsText, EveryParserReadsOursAsItReadsTheirs) {
  const std::string theirs = fixture("nccl_tests_all_reduce_8gpu.txt");
  ParsedRun reference = testing::parse_fixed_13(theirs);
  std::string ours = render_text_header(header_like_fixture());
  for (const auto& p : reference.rows)
    ours += render_text_row(row_from(p));
  RunFooter footer;
  footer.avg_busbw = *reference.avg_busbw;
  footer.line_rate.ceiling_gbytes = 50;
  footer.line_rate.basis = "slowest node a: 1 NIC, 400 Gb/s in all";
  footer.failures.push_back(
      {3, "dgx-a07", 3, 1024, DataType::kFloat, "sum", false, 1, 256, 0, 5, 4});
  ours += render_text_footer(footer, "all_reduce_perf");

  for (const std::string* text : std::vector<const std::string*>{&theirs, &ours}) {
    ParsedRun fixed = testing::parse_fixed_13(*text);
    ParsedRun regex = testing::parse_regex(*text);
    auto header = testing::parse_header_driven(*text);
    ASSERT_TRUE(header.has_value());
    ASSERT_EQ(fixed.rows.size(), reference.rows.size());
    ASSERT_EQ(regex.rows.size(), reference.rows.size());
    ASSERT_EQ(header->rows.size(), reference.rows.size());
    for (std::size_t i = 0; i < reference.rows.size(); ++i) {
      for (const ParsedRun* run : {&fixed, &regex, &*header}) {
        EXPECT_EQ(run->rows[i].size, reference.rows[i].size);
        EXPECT_EQ(run->rows[i].count, reference.rows[i].count);
        EXPECT_DOUBLE_EQ(run->rows[i].oop_busbw, reference.rows[i].oop_busbw);
        EXPECT_DOUBLE_EQ(run->rows[i].ip_time, reference.rows[i].ip_time);
        EXPECT_EQ(run->rows[i].ip_wrong, "0");
      }
    }
    for (const ParsedRun* run : {&fixed, &regex, &*header}) {
      ASSERT_TRUE(run->avg_busbw.has_value());
      EXPECT_DOUBLE_EQ(*run->avg_busbw, *reference.avg_busbw);
      EXPECT_EQ(run->out_of_bounds, 0);
      EXPECT_EQ(run->out_of_bounds_verdict, "OK");
    }
  }
}

TEST(NcclTestsText, WideNumbersStayFixedPointAndKeepThirteenTokens) {
  SizeRow row;
  row.bytes = 17179869184ull; // 16 GiB
  row.count = 4294967296ull;
  row.op = "sum";
  row.out_of_place = {123456789.5, 0.139, 0.243, 1234567, {}};
  row.in_place = {99999999.0, 1234567.891, 2160493.8, std::nullopt, {}};
  std::string line = render_text_row(row);
  EXPECT_EQ(line.find('e'), std::string::npos) << line; // no exponent anywhere
  auto t = testing::tokens(line);
  ASSERT_EQ(t.size(), 13u) << line;
  EXPECT_EQ(t[5], "123456790"); // nccl-tests would print 1.2e+08
  EXPECT_EQ(t[8], "1234567");   // nccl-tests' %6g would print 1.23457e+06
  EXPECT_EQ(t[12], "N/A");
  EXPECT_EQ(testing::parse_regex(line).rows.size(), 1u);
}

TEST(NcclTestsText, FixedFieldFollowsNcclTestsPrecisionSteps) {
  EXPECT_EQ(fixed_field(11.234, 7), "  11.23");
  EXPECT_EQ(fixed_field(12345.67, 7), "12345.7");
  EXPECT_EQ(fixed_field(1234567.4, 7), "1234567");
  EXPECT_EQ(fixed_field(0.004, 6), "  0.00");
  EXPECT_EQ(fixed_field(999.999, 6), "1000.0");
}

TEST(NcclTestsText, FixedGIsPercentGWithoutExponent) {
  EXPECT_EQ(fixed_g(145.825), "145.825");
  EXPECT_EQ(fixed_g(0), "0");
  EXPECT_EQ(fixed_g(12.5), "12.5");
  EXPECT_EQ(fixed_g(1234567.0), "1234567");
  EXPECT_EQ(fixed_g(0.0000123456), "0.0000123456");
}

TEST(NcclTestsText, PerRankFailuresAndThresholdVerdictAreCommentLines) {
  RunFooter footer;
  footer.out_of_bounds = 2;
  footer.avg_busbw = 3.5;
  footer.threshold.min_busbw = 5;
  footer.judged_busbw = 3.4;
  footer.judged_on = "sizes >= 64 MiB";
  footer.threshold_ok = false;
  footer.failures.push_back(
      {2, "node3", -1, 1048576, DataType::kInt32, "sum", true, 7, 262144, 9, 12, 13});
  std::string text = render_text_footer(footer, "all_reduce_perf");
  for (const std::string& line : testing::lines_of(text)) {
    if (line != "\n") {
      EXPECT_EQ(line[0], '#') << line;
    }
  }
  EXPECT_NE(
      text.find("rank 2 (node3, host memory): 7 of 262144 elements wrong, 1048576 B int32 sum "
                "in-place, first at element 9: got 12, expected 13"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("# Out of bounds values : 2 FAILED\n"), std::string::npos);
  EXPECT_NE(text.find("# Avg bus bandwidth    : 3.5 FAILED\n"), std::string::npos);
  // Tiny and huge averages keep %g's exponent, as nccl-tests prints them.
  footer.avg_busbw = 6.88115e-05;
  EXPECT_NE(
      render_text_footer(footer, "all_reduce_perf").find("# Avg bus bandwidth    : 6.88115e-05 "),
      std::string::npos);
  footer.avg_busbw = 1234567.0;
  EXPECT_NE(
      render_text_footer(footer, "all_reduce_perf").find("# Avg bus bandwidth    : 1.23457e+06 "),
      std::string::npos);
  EXPECT_NE(text.find("# Busbw threshold      : 3.4 GB/s average over sizes >= 64 MiB, required 5 "
                      "GB/s: FAILED"),
            std::string::npos)
      << text;
}

// The line-rate context: the ceiling, what it came from, and the run's share of it.
TEST(NcclTestsText, FooterGivesTheShareOfTheLineRate) {
  RunFooter footer;
  footer.avg_busbw = 9.0;
  footer.line_rate.ceiling_gbytes = 12.5;
  footer.line_rate.basis = "100 Gb/s NICs, 2 nodes";
  std::string text = render_text_footer(footer, "all_reduce_perf");
  EXPECT_NE(text.find("# Line-rate ceiling    : 12.5 GB/s busbw (100 Gb/s NICs, 2 nodes); avg "
                      "busbw is 72 % of it\n"),
            std::string::npos)
      << text;
  RunFooter unknown;
  unknown.line_rate.basis = "no NIC speed known";
  text = render_text_footer(unknown, "all_reduce_perf");
  EXPECT_NE(text.find("# Line-rate ceiling    : none (no NIC speed known)\n"), std::string::npos)
      << text;
}

TEST(NcclTestsText, DeviceLineHasRoomForNicAndTopology) {
  RankInfo r;
  r.rank = 3;
  r.pid = 4242;
  r.host = "node7";
  r.device = -1;
  r.pci_bus_id = "host";
  r.device_name = "host memory";
  r.nic = NicInfo{"mlx5_0/1", "RDMA port rate", 100};
  r.topology = "mlx5_0 PIX";
  EXPECT_EQ(render_device_line(r),
            "#  Rank  3 Group  0 Pid   4242 on      node7 device -1 [host] host memory | nic "
            "mlx5_0/1 100 Gb/s (RDMA port rate) | topo mlx5_0 PIX\n");
}

} // namespace
} // namespace fabric::nccltest
