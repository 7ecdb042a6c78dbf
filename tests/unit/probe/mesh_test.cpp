// The mesh driver: host lists, per-test parameters, rounds that never give a host two
// pairs at once, failures as missing cells, outliers measured again; and one real mesh of
// two in-process agents.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "common/json.h"
#include "probes/agent/agent.h"
#include "probes/mesh/mesh.h"
#include "probes/tcp/tcp_test.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;

std::vector<MeshHost> hosts(std::size_t n) {
  std::vector<std::string> entries;
  for (std::size_t i = 0; i < n; ++i)
    entries.push_back("node-" + std::to_string(i));
  auto parsed = parse_mesh_hosts(entries, 18515, "--hosts");
  EXPECT_TRUE(parsed.ok());
  return parsed.ok() ? *parsed : std::vector<MeshHost>{};
}

std::size_t index_of(const MeshHost& h) {
  return std::stoul(h.name.substr(5));
}

MeshTest test_named(const std::string& name) {
  auto t = make_mesh_test(name, {});
  EXPECT_TRUE(t.ok()) << t.error().message();
  return *t;
}

TEST(MeshHosts, FileWithCommentsAndPorts) {
  auto path = std::filesystem::temp_directory_path() / ("mesh-hosts-" + std::to_string(getpid()));
  {
    std::ofstream out(path);
    out << "# rack 1\nnode-a\n  node-b:9000   # spare port\n\n[fd00::3]:7\nfd00::4\n";
  }
  auto parsed = load_mesh_hosts(path.string(), 18515);
  std::filesystem::remove(path);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  ASSERT_EQ(parsed->size(), 4u);
  EXPECT_EQ((*parsed)[0].name, "node-a");
  EXPECT_EQ((*parsed)[0].agent.port, 18515);
  EXPECT_EQ((*parsed)[1].name, "node-b:9000");
  EXPECT_EQ((*parsed)[1].agent.port, 9000);
  EXPECT_EQ((*parsed)[2].agent.host, "fd00::3");
  EXPECT_EQ((*parsed)[3].agent.host, "fd00::4");
}

TEST(MeshHosts, CommaSeparatedList) {
  auto parsed = load_mesh_hosts("10.0.0.1, 10.0.0.2:1234,10.0.0.3", 4000);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].agent.port, 4000);
  EXPECT_EQ((*parsed)[1].agent.port, 1234);
}

TEST(MeshHosts, ErrorsNameTheProblem) {
  auto once = load_mesh_hosts("10.0.0.1", 18515);
  ASSERT_FALSE(once.ok());
  EXPECT_NE(once.error().message().find("needs at least two hosts, got 1"), std::string::npos);
  auto twice = load_mesh_hosts("a,b,a:18515", 18515);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("'a:18515' is listed twice"), std::string::npos);
  auto missing = load_mesh_hosts("/no/such/hosts-file", 18515);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/no/such/hosts-file"), std::string::npos);
  auto bad = load_mesh_hosts("a,b:99999", 18515);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
}

TEST(MeshTests, ParamsFollowEachTestsNames) {
  MeshTestSettings s;
  s.duration_s = 2;
  s.size = 4096;
  s.iters = 50;
  s.streams = 4;
  s.extra_params_json = R"({"gid_index":3,"streams":2})";
  struct Case {
    const char* name;
    const char* metric;
    bool ordered;
    const char* expected;
  } cases[] = {
      {"tcp_bw", "avg_gbps", true,
       R"({"duration_s":2.0,"write_size_bytes":4096,"gid_index":3,"streams":2})"},
      {"rdma_bw", "avg_gbps", true,
       R"({"duration_s":2.0,"sizes":[4096],"qps":4,"gid_index":3,"streams":2})"},
      {"tcp_lat", "p50_us", false, R"({"iters":50,"size_bytes":4096,"gid_index":3,"streams":2})"},
      {"rdma_lat", "p50_us", false, R"({"iters":50,"sizes":[4096],"gid_index":3,"streams":2})"},
  };
  for (const auto& c : cases) {
    auto t = make_mesh_test(c.name, s);
    ASSERT_TRUE(t.ok()) << t.error().message();
    EXPECT_EQ(t->metric, c.metric);
    EXPECT_EQ(t->ordered, c.ordered);
    auto got = json::parse(t->params_json, "got");
    auto want = json::parse(c.expected, "want");
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_EQ(*got, *want) << c.name << ": " << t->params_json;
  }
  EXPECT_FALSE(make_mesh_test("ping", s).ok());
  s.extra_params_json = "[1]";
  EXPECT_FALSE(make_mesh_test("tcp_bw", s).ok());
}

TEST(MeshReportMetric, ReadsTheSummaryField) {
  auto v = report_metric(R"({"test":"rdma_bw","summary":{"avg_gbps":97.5}})", "avg_gbps");
  ASSERT_TRUE(v.ok());
  EXPECT_DOUBLE_EQ(*v, 97.5);
  EXPECT_FALSE(report_metric(R"({"summary":{}})", "p50_us").ok());
  EXPECT_FALSE(report_metric(R"({"test":"x"})", "p50_us").ok());
}

TEST(MeshPaths, OneFilePerTestWhenSeveral) {
  EXPECT_EQ(per_test_path("out/mesh.csv", "tcp_bw", false), "out/mesh.csv");
  EXPECT_EQ(per_test_path("out/mesh.csv", "tcp_bw", true), "out/mesh-tcp_bw.csv");
  EXPECT_EQ(per_test_path("out.d/mesh", "tcp_lat", true), "out.d/mesh-tcp_lat");
  EXPECT_EQ(per_test_path(".hidden", "x", true), ".hidden-x");
}

// A runner that records what ran and when, and answers from a table.
struct FakeFabric {
  std::mutex mutex;
  std::set<std::size_t> busy;
  bool overlapped = false;
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  std::function<PairOutcome(std::size_t, std::size_t)> answer;

  PairRunner runner() {
    return
        [this](const MeshHost& s, const MeshHost& d, const MeshTest&, std::chrono::milliseconds) {
          std::size_t a = index_of(s), b = index_of(d);
          {
            std::lock_guard lock(mutex);
            overlapped |= busy.count(a) || busy.count(b);
            busy.insert(a);
            busy.insert(b);
            runs.emplace_back(a, b);
          }
          PairOutcome o = answer(a, b);
          std::lock_guard lock(mutex);
          busy.erase(a);
          busy.erase(b);
          return o;
        };
  }
};

TEST(MeshRun, EveryOrderedPairOnceWithoutSharingAHost) {
  FakeFabric fabric;
  fabric.answer = [](std::size_t a, std::size_t b) {
    return PairOutcome{100.0 + static_cast<double>(a * 10 + b) * 0.01, ""};
  };
  MeshOptions o;
  o.hosts = hosts(5);
  o.tests = {test_named("tcp_bw")};
  auto reports = run_mesh(o, {}, fabric.runner());
  ASSERT_TRUE(reports.ok()) << reports.error().message();
  EXPECT_FALSE(fabric.overlapped) << "a host took part in two pairs at once";
  std::set<std::pair<std::size_t, std::size_t>> unique(fabric.runs.begin(), fabric.runs.end());
  EXPECT_EQ(fabric.runs.size(), 20u);
  EXPECT_EQ(unique.size(), 20u);
  const MeshReport& r = reports->front();
  EXPECT_EQ(r.unit, "Gb/s");
  for (std::size_t a = 0; a < 5; ++a) {
    for (std::size_t b = 0; b < 5; ++b) {
      if (a == b) {
        EXPECT_FALSE(r.matrix[a][b]);
      } else {
        ASSERT_TRUE(r.matrix[a][b]);
        EXPECT_DOUBLE_EQ(*r.matrix[a][b], 100.0 + static_cast<double>(a * 10 + b) * 0.01);
      }
    }
  }
  EXPECT_TRUE(r.outliers.cells.empty());
  EXPECT_TRUE(r.retests.empty());
}

TEST(MeshRun, SymmetricTestRunsEachPairOnceAndFillsBothCells) {
  FakeFabric fabric;
  fabric.answer = [](std::size_t, std::size_t) { return PairOutcome{5.0, ""}; };
  MeshOptions o;
  o.hosts = hosts(4);
  o.tests = {test_named("tcp_lat")};
  auto reports = run_mesh(o, {}, fabric.runner());
  ASSERT_TRUE(reports.ok());
  EXPECT_EQ(fabric.runs.size(), 6u);
  const MeshReport& r = reports->front();
  for (std::size_t a = 0; a < 4; ++a)
    for (std::size_t b = 0; b < 4; ++b)
      EXPECT_EQ(r.matrix[a][b].has_value(), a != b);
}

TEST(MeshRun, FailedPairIsAMissingCellWithItsError) {
  FakeFabric fabric;
  fabric.answer = [](std::size_t a, std::size_t b) {
    if (a == 2 && b == 0) return PairOutcome{std::nullopt, "connection refused by node-0"};
    return PairOutcome{50.0, ""};
  };
  MeshOptions o;
  o.hosts = hosts(3);
  o.tests = {test_named("rdma_bw")};
  auto reports = run_mesh(o, {}, fabric.runner());
  ASSERT_TRUE(reports.ok());
  const MeshReport& r = reports->front();
  EXPECT_FALSE(r.matrix[2][0]);
  EXPECT_TRUE(r.matrix[0][2]);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].source, 2u);
  EXPECT_EQ(r.failures[0].destination, 0u);
  EXPECT_EQ(r.failures[0].error, "connection refused by node-0");
}

TEST(MeshRun, SlowLinkIsFlaggedAndMeasuredAgain) {
  FakeFabric fabric;
  fabric.answer = [](std::size_t a, std::size_t b) {
    return PairOutcome{a == 1 && b == 3 ? 20.0 : 100.0, ""};
  };
  MeshOptions o;
  o.hosts = hosts(6);
  o.tests = {test_named("tcp_bw")};
  std::vector<MeshProgress> seen;
  auto reports = run_mesh(
      o, [&](const MeshProgress& p) { seen.push_back(p); }, fabric.runner());
  ASSERT_TRUE(reports.ok());
  const MeshReport& r = reports->front();
  ASSERT_EQ(r.outliers.cells.size(), 1u);
  EXPECT_EQ(r.outliers.cells[0].source, 1u);
  EXPECT_EQ(r.outliers.cells[0].destination, 3u);
  ASSERT_EQ(r.retests.size(), 1u);
  EXPECT_EQ(r.retests[0].source, 1u);
  EXPECT_EQ(r.retests[0].destination, 3u);
  EXPECT_EQ(r.retests[0].value, 20.0);
  EXPECT_EQ(fabric.runs.size(), 31u); // 30 pairs and one retest
  ASSERT_EQ(seen.size(), 31u);
  EXPECT_TRUE(seen.back().retest);
  EXPECT_EQ(seen.front().rounds, 10u);

  o.retest = false;
  fabric.runs.clear();
  ASSERT_TRUE(run_mesh(o, {}, fabric.runner()).ok());
  EXPECT_EQ(fabric.runs.size(), 30u);
}

TEST(MeshRun, JsonHoldsEveryTest) {
  FakeFabric fabric;
  fabric.answer = [](std::size_t, std::size_t) { return PairOutcome{1.0, ""}; };
  MeshOptions o;
  o.hosts = hosts(3);
  o.tests = {test_named("tcp_bw"), test_named("tcp_lat")};
  auto reports = run_mesh(o, {}, fabric.runner());
  ASSERT_TRUE(reports.ok());
  auto doc = json::parse(render_mesh_reports_json(*reports), "mesh");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ((*doc)["schema_version"].GetInt(), 1);
  EXPECT_STREQ((*doc)["test"].GetString(), "mesh");
  ASSERT_EQ((*doc)["hosts"].Size(), 3u);
  ASSERT_EQ((*doc)["tests"].Size(), 2u);
  EXPECT_STREQ((*doc)["tests"][1]["metric"].GetString(), "tcp_lat");
}

// Two agents in this process: the mesh delegates each pair to the source's agent.
TEST(MeshRun, DelegatesToRealAgents) {
  std::vector<std::unique_ptr<Agent>> agents;
  std::vector<std::thread> threads;
  std::vector<std::string> entries;
  for (int i = 0; i < 2; ++i) {
    AgentOptions options;
    options.bind_address = "127.0.0.1";
    options.port = 0;
    agents.push_back(std::make_unique<Agent>(options));
    register_tcp_tests(*agents.back());
    ASSERT_TRUE(agents.back()->listen().ok());
    entries.push_back("127.0.0.1:" + std::to_string(agents.back()->port()));
  }
  for (auto& a : agents)
    threads.emplace_back([&a] { (void)a->serve(); });

  MeshOptions o;
  auto parsed = parse_mesh_hosts(entries, 18515, "--hosts");
  ASSERT_TRUE(parsed.ok());
  o.hosts = *parsed;
  MeshTestSettings s;
  s.iters = 50;
  s.duration_s = 0.2;
  o.tests = {*make_mesh_test("tcp_lat", s), *make_mesh_test("tcp_bw", s)};
  o.pair_timeout = 30s;
  auto reports = run_mesh(o);
  for (auto& a : agents)
    a->request_stop();
  for (auto& t : threads)
    t.join();
  ASSERT_TRUE(reports.ok()) << reports.error().message();
  for (const auto& r : *reports) {
    EXPECT_TRUE(r.failures.empty()) << r.failures.front().error;
    ASSERT_TRUE(r.matrix[0][1] && r.matrix[1][0]) << r.metric;
    EXPECT_GT(*r.matrix[0][1], 0);
  }
}

} // namespace
} // namespace fabric::probes
