// `fabric-probe mesh` in TCP mode among four namespaces joined by a bridge (in a fifth
// namespace), each running the built agent: the matrix is complete, and the JSON, CSV and
// SVG reports are written.
#include <fstream>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/subprocess.h"
#include "tests/netns/probe/probe_processes.h"
#include "tests/netns/test_network.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;
using testing::ProbeAgent;
using testing::TempDir;
using testing::TestNetwork;

constexpr int kHosts = 4;

class MeshNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!testing::can_manage_network()) GTEST_SKIP() << testing::skip_reason();
    net_.add_namespace("br");
    ASSERT_TRUE(
        testing::run_checked({"ip", "-n", ns("br"), "link", "add", "br0", "type", "bridge"}).ok());
    ASSERT_TRUE(testing::run_checked({"ip", "-n", ns("br"), "link", "set", "br0", "up"}).ok());
    for (int i = 1; i <= kHosts; ++i) {
      std::string host = "h" + std::to_string(i);
      net_.add_namespace(host);
      auto [inside, port] = net_.add_veth("m" + std::to_string(i), ns(host), ns("br"));
      ASSERT_FALSE(inside.empty());
      ASSERT_TRUE(
          testing::run_checked({"ip", "-n", ns("br"), "link", "set", port, "master", "br0"}).ok());
      ASSERT_TRUE(testing::run_checked(
                      {"ip", "-n", ns(host), "addr", "add", address(i) + "/24", "dev", inside})
                      .ok());
    }
    for (int i = 1; i <= kHosts; ++i) {
      agents_.push_back(std::make_unique<ProbeAgent>(ns("h" + std::to_string(i)), dir_,
                                                     "agent" + std::to_string(i)));
      ASSERT_TRUE(agents_.back()->ready()) << agents_.back()->log();
    }
  }

  std::string ns(const std::string& suffix) const { return net_.ns_name(suffix); }
  static std::string address(int i) { return "10.78.0." + std::to_string(i); }
  std::string host_entry(int i) const {
    return address(i) + ":" + std::to_string(agents_[i - 1]->port());
  }

  TestNetwork net_;
  TempDir dir_;
  std::vector<std::unique_ptr<ProbeAgent>> agents_;
};

TEST_F(MeshNetns, TcpMeshFillsTheMatrixAndWritesReports) {
  std::string hosts_file = dir_.file("hosts");
  {
    std::ofstream out(hosts_file);
    out << "# the lab's four hosts\n";
    for (int i = 1; i <= kHosts; ++i)
      out << host_entry(i) << (i == 2 ? "   # with a comment\n" : "\n") << (i == 3 ? "\n" : "");
  }
  SubprocessOptions options;
  options.timeout = 300s;
  auto r =
      run_subprocess({"ip", "netns", "exec", ns("h1"), FABRIC_PROBE_BINARY, "mesh", "--hosts",
                      hosts_file, "--test", "tcp_bw,tcp_lat", "-D", "500ms", "-n", "200", "--json",
                      "--csv", dir_.file("mesh.csv"), "--heatmap", dir_.file("mesh.svg")},
                     options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  // 0, or 3 when noise on a busy machine looks like an outlier; never a failed pair (2).
  ASSERT_TRUE(r->exit_status == 0 || r->exit_status == 3) << r->exit_status << r->stderr_text;
  // stderr is no terminal here: no progress line.
  EXPECT_EQ(r->stderr_text.find("round"), std::string::npos) << r->stderr_text;

  auto doc = json::parse(r->stdout_text, "mesh output");
  ASSERT_TRUE(doc.ok()) << doc.error().message() << r->stdout_text;
  EXPECT_STREQ((*doc)["test"].GetString(), "mesh");
  ASSERT_EQ((*doc)["hosts"].Size(), unsigned(kHosts));
  EXPECT_STREQ((*doc)["hosts"][1].GetString(), host_entry(2).c_str());
  const auto& tests = (*doc)["tests"];
  ASSERT_EQ(tests.Size(), 2u);
  for (const auto& test : tests.GetArray()) {
    std::string metric = test["metric"].GetString();
    SCOPED_TRACE(metric);
    EXPECT_EQ(test["failures"].Size(), 0u);
    const auto& matrix = test["matrix"];
    ASSERT_EQ(matrix.Size(), unsigned(kHosts));
    for (int s = 0; s < kHosts; ++s) {
      for (int d = 0; d < kHosts; ++d) {
        const auto& cell = matrix[s][d];
        if (s == d) {
          EXPECT_TRUE(cell.IsNull());
        } else {
          ASSERT_TRUE(cell.IsNumber()) << s << "->" << d;
          EXPECT_GT(cell.GetDouble(), 0);
        }
      }
    }
    EXPECT_STREQ(test["unit"].GetString(), metric == "tcp_bw" ? "Gb/s" : "us");

    std::string csv = testing::read_text(dir_.file("mesh-" + metric + ".csv"));
    ASSERT_FALSE(csv.empty()) << "no CSV for " << metric;
    // RFC 4180: CRLF line ends, a header and one row per source.
    EXPECT_EQ(csv.substr(0, csv.find("\r\n")), "source," + host_entry(1) + "," + host_entry(2) +
                                                   "," + host_entry(3) + "," + host_entry(4));
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), kHosts + 1);

    std::string svg = testing::read_text(dir_.file("mesh-" + metric + ".svg"));
    ASSERT_NE(svg.find("<svg"), std::string::npos);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
    for (int i = 1; i <= kHosts; ++i)
      EXPECT_NE(svg.find(host_entry(i)), std::string::npos);
  }
  // Every agent served both as a source (run) and as a destination.
  for (auto& agent : agents_) {
    EXPECT_NE(agent->log().find("test=run outcome=ok"), std::string::npos) << agent->log();
    EXPECT_NE(agent->log().find("test=tcp_bw outcome=ok"), std::string::npos) << agent->log();
  }
}

TEST_F(MeshNetns, UnreachableAgentIsAMissingCellNotAnAbort) {
  // Host 4's agent is gone: its pairs fail, the others are measured.
  ASSERT_TRUE(agents_[3]->process().stop(SIGTERM, 15s).ok());
  SubprocessOptions options;
  options.timeout = 300s;
  std::string hosts =
      host_entry(1) + "," + host_entry(2) + "," + host_entry(3) + "," + host_entry(4);
  auto r = run_subprocess({"ip", "netns", "exec", ns("h1"), FABRIC_PROBE_BINARY, "mesh", "--hosts",
                           hosts, "--test", "tcp_lat", "-n", "100", "--json"},
                          options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 2) << r->stderr_text;
  EXPECT_NE(r->stderr_text.find("pairs without a result"), std::string::npos) << r->stderr_text;
  auto doc = json::parse(r->stdout_text, "mesh output");
  ASSERT_TRUE(doc.ok()) << r->stdout_text;
  const auto& test = (*doc)["tests"][0];
  EXPECT_TRUE(test["matrix"][0][1].IsNumber());
  EXPECT_TRUE(test["matrix"][0][3].IsNull());
  EXPECT_TRUE(test["matrix"][3][0].IsNull());
  // Pairs with host 4 on either side: 3 pairs, both cells of each.
  ASSERT_EQ(test["failures"].Size(), 6u);
  // The mesh client names what it found itself; an agent that was to test against host 4
  // only says that no agent answered there (delegation_guard.h).
  for (const auto& failure : test["failures"].GetArray()) {
    std::string error = failure["error"].GetString();
    EXPECT_TRUE(error.find("no fabric-probe agent listening on " + host_entry(4)) !=
                    std::string::npos ||
                error.find("none completed a handshake at " + host_entry(4)) != std::string::npos)
        << error;
  }
}

} // namespace
} // namespace fabric
