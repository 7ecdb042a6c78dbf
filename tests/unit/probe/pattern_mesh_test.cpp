// The pattern mesh with a fake fabric behind the pair runner: the pair scheduler lets a
// slow host hold up only its own pairs, the verdict names the planted fault, and the
// reports stay bounded; the hosts file with places parsed as hostile input.
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/json.h"
#include "probes/mesh/mesh_args.h"
#include "probes/mesh/pattern_report.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;

TEST(PairScheduler, ASlowHostHoldsUpOnlyItsOwnPairs) {
  auto rounds = schedule_rounds(8, false);
  std::size_t partner = 0; // host 0's partner in round 0
  for (auto [a, b] : rounds[0])
    if (a == 0 || b == 0) partner = a == 0 ? b : a;
  std::size_t independent = 0; // round 1's pairs without host 0 or its partner
  for (auto [a, b] : rounds[1])
    if (a != 0 && b != 0 && a != partner && b != partner) ++independent;
  ASSERT_GT(independent, 0u);

  std::mutex m;
  std::condition_variable cv;
  std::size_t done_in_round_1 = 0;
  bool released_in_time = false;
  std::set<std::size_t> busy;
  bool overlapped = false;
  run_scheduled_pairs(rounds, 8, 64, [&](std::size_t r, std::size_t i) {
    auto [a, b] = rounds[r][i];
    {
      std::lock_guard lock(m);
      overlapped |= !busy.insert(a).second || !busy.insert(b).second;
    }
    if (r == 0 && (a == 0 || b == 0)) {
      // The slow host: its first pair ends only once the next round went on without it.
      std::unique_lock lock(m);
      released_in_time = cv.wait_for(lock, 30s, [&] { return done_in_round_1 == independent; });
    }
    std::lock_guard lock(m);
    busy.erase(a);
    busy.erase(b);
    if (r == 1 && a != 0 && b != 0 && a != partner && b != partner) ++done_in_round_1;
    cv.notify_all();
  });
  EXPECT_TRUE(released_in_time) << "round 1 waited for the slow host's round 0 pair";
  EXPECT_FALSE(overlapped) << "a host took part in two pairs at once";
}

TEST(PairScheduler, RunsEveryPairOnceWithOneThread) {
  auto rounds = schedule_rounds(7, true);
  std::mutex m;
  std::set<MeshPair> seen;
  run_scheduled_pairs(rounds, 7, 1, [&](std::size_t r, std::size_t i) {
    std::lock_guard lock(m);
    EXPECT_TRUE(seen.insert(rounds[r][i]).second);
  });
  EXPECT_EQ(seen.size(), 42u);
}

// 64 hosts on 8 leaves; host 21 is slow, host 50's agent is dead.
struct FakeFleet {
  MeshOptions options;
  std::mutex mutex;
  std::size_t pairs = 0;

  FakeFleet() {
    std::string file;
    for (int i = 0; i < 64; ++i)
      file += "h" + std::to_string(i) + " leaf=l" + std::to_string(i / 8) + "\n";
    options.hosts = *parse_mesh_hosts_file(file, 18515, "hosts");
    options.tests = {*make_mesh_test("tcp_bw", {})};
    options.pattern = *parse_pattern("ring");
  }
  PairRunner runner() {
    return [this](const MeshHost& s, const MeshHost& d, const MeshTest&,
                  std::chrono::milliseconds) -> PairOutcome {
      {
        std::lock_guard lock(mutex);
        ++pairs;
      }
      if (s.name == "h50" || d.name == "h50") return {std::nullopt, "connection refused"};
      const bool slow = s.name == "h21" || d.name == "h21";
      return {slow ? 3.0 : 9.0 + static_cast<double>(s.name.size() % 3) * 0.1, ""};
    };
  }
};

TEST(PatternMesh, RingAndNarrowingNameTheSlowNodeDespiteADeadAgent) {
  FakeFleet fleet;
  auto reports = run_pattern_mesh(fleet.options, {}, fleet.runner());
  ASSERT_TRUE(reports.ok()) << reports.error().message();
  const PatternMeshReport& r = reports->front();
  EXPECT_EQ(r.pattern_rounds, 4u);
  EXPECT_EQ(r.narrowing.verdict.kind, FaultKind::kNode);
  EXPECT_EQ(r.hosts.at(r.narrowing.verdict.hosts.at(0)), "h21");
  EXPECT_EQ(r.failures.size(), 4u); // the dead agent's two ring partners, each way
  std::string text = render_pattern_text(r);
  EXPECT_NE(text.find("verdict: node h21: slow with every partner"), std::string::npos) << text;
  EXPECT_NE(text.find("failures: 4 pairs without a result"), std::string::npos) << text;
  EXPECT_NE(text.find("8 leaves"), std::string::npos) << text;
  auto verdict = pattern_verdict(*reports);
  ASSERT_FALSE(verdict.ok());
  EXPECT_EQ(verdict.error().code(), ErrorCode::kSystem); // a failure outranks the fault

  auto doc = json::parse(render_pattern_reports_json(*reports), "json");
  ASSERT_TRUE(doc.ok());
  const auto& test = (*doc)["tests"][0];
  EXPECT_STREQ(test["verdict"]["kind"].GetString(), "node");
  EXPECT_STREQ(test["verdict"]["hosts"][0].GetString(), "h21");
  EXPECT_EQ(test["failures"]["count"].GetUint(), 4u);

  std::string csv = render_pattern_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(r.results.size()) + 1);
  EXPECT_NE(csv.find(",h21,l2,"), std::string::npos);
  EXPECT_NE(csv.find("connection refused"), std::string::npos);

  // The heatmap has a row per leaf, pairs inside a leaf on the diagonal, leaf l2 flagged.
  MeshReport grouped = group_pattern_report(r);
  ASSERT_EQ(grouped.hosts.size(), 8u);
  EXPECT_TRUE(grouped.matrix[0][0].has_value());
  ASSERT_EQ(grouped.outliers.hosts.size(), 1u);
  EXPECT_EQ(grouped.hosts[grouped.outliers.hosts[0].host], "l2");
  std::string svg = render_pattern_svg(r);
  EXPECT_NE(svg.find("!l2"), std::string::npos);
}

std::size_t host_number(const MeshHost& h) {
  return std::stoul(h.name.substr(1));
}

MeshOptions placed_hosts(int n, int per_leaf, const char* pattern) {
  MeshOptions o;
  std::string file;
  for (int i = 0; i < n; ++i)
    file += "h" + std::to_string(i) + " leaf=l" + std::to_string(i / per_leaf) + "\n";
  o.hosts = *parse_mesh_hosts_file(file, 18515, "hosts");
  o.tests = {*make_mesh_test("tcp_bw", {})};
  o.pattern = *parse_pattern(pattern);
  return o;
}

// Rates between ranks that share cores vary by a factor: a linear MAD of them exceeds the
// median, the low limit falls below zero, and the slow node's 0.05 Gb/s passed as "no fault".
TEST(PatternMesh, AWideSpreadOfRatesStillShowsASlowNode) {
  MeshOptions o = placed_hosts(64, 8, "ring");
  const double spread[] = {2, 3, 5, 8, 12, 20};
  auto reports = run_pattern_mesh(
      o, {}, [&](const MeshHost& s, const MeshHost& d, const MeshTest&, std::chrono::milliseconds) {
        if (s.name == "h21" || d.name == "h21") return PairOutcome{0.05, ""};
        return PairOutcome{spread[(host_number(s) * 7 + host_number(d) * 3) % 6], ""};
      });
  ASSERT_TRUE(reports.ok()) << reports.error().message();
  const PatternMeshReport& r = reports->front();
  EXPECT_EQ(r.narrowing.verdict.kind, FaultKind::kNode) << render_pattern_text(r);
  ASSERT_EQ(r.narrowing.verdict.hosts.size(), 1u);
  EXPECT_EQ(r.hosts.at(r.narrowing.verdict.hosts[0]), "h21");
  EXPECT_GT(r.narrowing.limit, 0.0);
  EXPECT_LT(r.narrowing.limit, r.narrowing.baseline) << "a rate cannot fall below zero";
  EXPECT_EQ(render_pattern_text(r).find("low when below -"), std::string::npos);
}

// 32 hosts on four leaves, leaf l2's uplink slow: with cross-leaf:1 alone its pairs were
// half of the results, the median slow and nothing low; the round inside the leaves makes
// them a quarter, and the follow-up against an untouched leaf names the uplink.
TEST(PatternMesh, CrossLeafNamesASlowUplinkAmongFourLeaves) {
  MeshOptions o = placed_hosts(32, 8, "cross-leaf");
  auto reports = run_pattern_mesh(
      o, {}, [&](const MeshHost& s, const MeshHost& d, const MeshTest&, std::chrono::milliseconds) {
        const std::size_t a = host_number(s) / 8, b = host_number(d) / 8;
        return PairOutcome{a != b && (a == 2 || b == 2) ? 0.12 : 9.5, ""};
      });
  ASSERT_TRUE(reports.ok()) << reports.error().message();
  const PatternMeshReport& r = reports->front();
  EXPECT_EQ(r.narrowing.verdict.kind, FaultKind::kUplink) << render_pattern_text(r);
  EXPECT_EQ(r.narrowing.verdict.leaf, "l2");
  EXPECT_EQ(r.pattern_rounds, 4u); // one round across, one inside, each both ways
  EXPECT_LE(r.narrowing.follow_up_rounds, 2u);
  EXPECT_NE(r.plan.find("+ 1 reference round inside the leaves"), std::string::npos) << r.plan;
}

TEST(PatternMesh, TenThousandHostsStayBounded) {
  MeshOptions o;
  std::vector<std::string> entries;
  for (int i = 0; i < 10000; ++i)
    entries.push_back("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250));
  o.hosts = *parse_mesh_hosts(entries, 18515, "--hosts");
  o.tests = {*make_mesh_test("tcp_lat", {})};
  o.pattern = *parse_pattern("random:2");
  auto reports = run_pattern_mesh(
      o, {}, [](const MeshHost& s, const MeshHost& d, const MeshTest&, std::chrono::milliseconds) {
        const bool slow = s.name == "10.1.7.7" || d.name == "10.1.7.7";
        return PairOutcome{slow ? 80.0 : 20.0, ""};
      });
  ASSERT_TRUE(reports.ok()) << reports.error().message();
  const PatternMeshReport& r = reports->front();
  EXPECT_EQ(r.narrowing.verdict.kind, FaultKind::kNode);
  EXPECT_EQ(r.hosts.at(r.narrowing.verdict.hosts.at(0)), "10.1.7.7");
  EXPECT_LE(r.results.size(), 2 * 5000u + 8u); // two matchings and a few follow-ups
  EXPECT_LT(render_pattern_text(r).size(), 4096u);
  MeshReport grouped = group_pattern_report(r);
  EXPECT_EQ(grouped.hosts.size(), kMaxHeatmapGroups);
  EXPECT_EQ(grouped.hosts.front(), "10.1.0.0..10.1.0.156");
}

TEST(MeshArgsPattern, AllPairsAboveTheLimitPointsToAPattern) {
  auto path = std::filesystem::temp_directory_path() / ("mesh-big-" + std::to_string(getpid()));
  {
    std::ofstream out(path);
    for (int i = 0; i < 1100; ++i)
      out << "10.2." << i / 250 << "." << i % 250 << "\n";
  }
  MeshArgs a;
  a.hosts = path.string();
  a.tests = "tcp_bw";
  auto all = make_mesh_options(a);
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.error().message().find("choose a --pattern"), std::string::npos);
  a.pattern = "random:3";
  a.seed = "42";
  a.parallel = "512";
  auto random = make_mesh_options(a);
  std::filesystem::remove(path);
  ASSERT_TRUE(random.ok()) << random.error().message();
  EXPECT_EQ(random->pattern->seed, 42u);
  EXPECT_EQ(random->parallel, 512u);
  a.pattern = "ring";
  auto seeded_ring = make_mesh_options(a);
  EXPECT_FALSE(seeded_ring.ok());
}

TEST(MeshHostsFile, PlacesAreParsed) {
  auto hosts = parse_mesh_hosts_file("# HOST leaf rail spine\n"
                                     "10.0.1.1:9000\tleaf=l01 rail=0 spine=s1\n"
                                     "\n"
                                     "node-b   spine=s1 leaf=l01   # comment\n"
                                     "[fd00::3]:7 leaf=l02\r\n",
                                     18515, "hosts");
  ASSERT_TRUE(hosts.ok()) << hosts.error().message();
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].agent.port, 9000);
  EXPECT_EQ((*hosts)[0].place.leaf, "l01");
  EXPECT_EQ((*hosts)[0].place.rail, "0");
  EXPECT_EQ((*hosts)[1].place.spine, "s1");
  EXPECT_EQ((*hosts)[1].place.rail, "");
  EXPECT_EQ((*hosts)[2].agent.host, "fd00::3");
  EXPECT_EQ(leaves_of(*hosts), (std::vector<std::string>{"l01", "l01", "l02"}));
}

TEST(MeshHostsFile, ErrorsNameTheLine) {
  struct Case {
    std::string text, expected;
  } cases[] = {
      {"a leaf=x\nb lef=y\n", "line 2: unknown key 'lef' (keys: leaf, rail, spine)"},
      {"a leaf=x leaf=y\nb\n", "line 1: 'leaf' is given twice"},
      {"a leaf=\nb\n", "line 1: leaf must be 1 to 64 characters"},
      {"a leaf=" + std::string(65, 'x') + "\nb\n", "line 1: leaf must be 1 to 64 characters"},
      {"a leaf=x/y\nb\n", "line 1: leaf may hold letters"},
      {"a rack7\nb\n", "line 1: 'rack7' is not KEY=NAME"},
      {"a leaf=x\n\nb\n", "line 3: line 1 gives a leaf= and line 3 does not"},
      {"a\nb:99999\n", "line 2: "},
      {"a\n" + std::string(600, 'b') + "\n", "line 2: longer than 512 characters"},
      {"a\na\n", "'a' is listed twice"},
      {"# only\na\n", "needs at least two hosts, got 1"},
  };
  for (const auto& c : cases) {
    auto r = parse_mesh_hosts_file(c.text, 18515, "--hosts f");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message().find(c.expected), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("--hosts f"), std::string::npos) << r.error().message();
  }
  std::string many;
  for (std::size_t i = 0; i <= kMaxMeshHosts; ++i)
    many += "h" + std::to_string(i) + "\n";
  auto r = parse_mesh_hosts_file(many, 18515, "f");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("more than 20000 hosts"), std::string::npos);
}

} // namespace
} // namespace fabric::probes
