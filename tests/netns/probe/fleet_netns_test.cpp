// The fleet simulation: N agents (64 by default) in their own namespaces, each behind a
// veth on its leaf's bridge, eight hosts a leaf, the leaves joined by uplink veths to a
// spine bridge, every host's egress shaped with tc so that the simulated fabric, not the
// CPU, sets the rates (kFabricKbit below). One fault is planted at a tenth of that rate
// (at least 1 Mbit/s), first a slow node (both ends of its veth), then a slow leaf uplink
// (both ends of the uplink veth); the real `fabric-probe mesh --pattern` over TCP must name
// exactly that fault. Each run prints one "fleet:" line (hosts, rates, pattern, rounds, wall
// time, the coordinator's CPU time and peak memory) that scripts/bench/fleet_mesh.sh
// collects; nothing here asserts a time.
//
// FABRIC_FLEET_HOSTS sets N (24 to 512, a multiple of 8: a slow uplink is told from a slow
// fabric only with a third leaf to compare against).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

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

constexpr int kPerLeaf = 8;
// What all of a round's pairs carry at once (n / 2 pairs): a budget two loaded cores move
// through bridges and tbf with room to spare (64 hosts at 10 Mbit/s each named both
// faults on a machine at load 21). Each host gets its share, at most 10 Mbit/s: 10 up to 64 hosts,
// 5 at 128, 2.5 at 256, so the rates are the fabric's at every size. At a fixed 10 Mbit/s,
// 256 hosts asked for 1.28 Gbit/s and the cores set the rates: healthy pairs read low.
constexpr int kFabricKbit = 320'000;
constexpr int kMaxHostKbit = 10'000;
constexpr int kSlowdown = 10; // the planted fault's rate: a tenth
// ... but not below 1 Mbit/s, the planted rate up to 64 hosts: a slow uplink carries a
// round's pairs across it at once (16 at 256 hosts), and at 0.25 Mbit/s some of them made no
// progress within the agents' I/O deadline, a failed pair where a slow one was planted.
constexpr int kMinSlowKbit = 1'000;

int fleet_size() {
  const char* env = std::getenv("FABRIC_FLEET_HOSTS");
  int n = env != nullptr ? std::atoi(env) : 64;
  return n >= 3 * kPerLeaf && n <= 512 && n % kPerLeaf == 0 ? n : 64;
}

int host_kbit(int hosts) {
  return std::min(kMaxHostKbit, kFabricKbit / (hosts / 2));
}

// A link's egress shaper, as `tc -batch` lines. Data goes through a tbf at `kbit`; the slow
// rate queues up to 2 s rather than 100 ms: eight streams across one slow uplink overflow a
// short queue, and TCP's backoff after repeated drops then starves a stream past the test's
// I/O timeout, a failed pair instead of a slow one. ARP bypasses the tbf in a class of its
// own (a fabric's control traffic does not queue behind data): shaped with the data, a full
// queue at 256 hosts tail-dropped a healthy pair's ARP, and it failed "No route to host".
// The kernel here has htb and u32 but not prio.
std::string tbf_line(const std::string& dev, int kbit, bool slow) {
  return "qdisc replace dev " + dev + " parent 1:20 handle 20: tbf rate " + std::to_string(kbit) +
         "kbit burst 4kb latency " + (slow ? "2s" : "100ms") + "\n";
}

std::string shaper_lines(const std::string& dev, int kbit, bool slow) {
  const std::string on = " dev " + dev;
  std::string lines;
  lines += "qdisc add" + on + " root handle 1: htb default 20\n";
  lines += "class add" + on + " parent 1: classid 1:10 htb rate 100mbit quantum 1514\n"; // ARP
  lines += "class add" + on + " parent 1: classid 1:20 htb rate 10gbit quantum 1514\n";  // data
  lines += "filter add" + on + " parent 1: protocol arp prio 1 u32 match u32 0 0 classid 1:10\n";
  return lines + tbf_line(dev, kbit, slow); // the data's rate is the tbf's
}

// The kernel's ARP table is one for all namespaces, and past gc_thresh3 entries (1,024 by
// default) a new neighbour is refused ("neighbor table overflow"): at 256 hosts the
// coordinator's 256 and every host's partners passed it, and agents failed each other's
// handshakes. Raised for the test where the fleet needs more, and restored after it.
class NeighbourTableLimit {
public:
  explicit NeighbourTableLimit(long wanted) {
    std::ifstream in(kPath);
    if (!(in >> saved_) || saved_ >= wanted) return;
    std::ofstream(kPath) << wanted << "\n";
    raised_ = true;
  }
  ~NeighbourTableLimit() {
    if (raised_) std::ofstream(kPath) << saved_ << "\n";
  }
  NeighbourTableLimit(const NeighbourTableLimit&) = delete;
  NeighbourTableLimit& operator=(const NeighbourTableLimit&) = delete;

private:
  static constexpr const char* kPath = "/proc/sys/net/ipv4/neigh/default/gc_thresh3";
  long saved_ = 0;
  bool raised_ = false;
};

class FleetSimulation : public ::testing::Test {
protected:
  void SetUp() override {
    if (!testing::can_manage_network()) GTEST_SKIP() << testing::skip_reason();
    n_ = fleet_size();
    rate_kbit_ = host_kbit(n_);
    // The coordinator knows every host, and each host a few partners.
    neighbours_ = std::make_unique<NeighbourTableLimit>(8L * n_);
    const std::string fab = net_.add_namespace("fab");
    (void)fab;
    ASSERT_TRUE(ip({"link", "add", "sp", "type", "bridge"}));
    ASSERT_TRUE(ip({"link", "set", "sp", "up"}));
    for (int l = 0; l < n_ / kPerLeaf; ++l) {
      const std::string leaf = "lf" + std::to_string(l);
      ASSERT_TRUE(ip({"link", "add", leaf, "type", "bridge"}));
      ASSERT_TRUE(ip({"link", "set", leaf, "up"}));
      auto [down, up] = net_.add_veth("u" + std::to_string(l), ns("fab"), ns("fab"));
      ASSERT_FALSE(down.empty());
      ASSERT_TRUE(ip({"link", "set", down, "master", leaf}));
      ASSERT_TRUE(ip({"link", "set", up, "master", "sp"}));
      uplinks_.push_back({down, up});
    }
    for (int i = 0; i < n_; ++i) {
      const std::string host = "h" + std::to_string(i);
      net_.add_namespace(host);
      auto [inside, port] = net_.add_veth(host, ns(host), ns("fab"));
      ASSERT_FALSE(inside.empty());
      ASSERT_TRUE(ip({"link", "set", port, "master", "lf" + std::to_string(i / kPerLeaf)}));
      ASSERT_TRUE(testing::run_checked(
                      {"ip", "-n", ns(host), "addr", "add", address(i) + "/16", "dev", inside})
                      .ok());
      ASSERT_TRUE(shape(ns(host), inside, rate_kbit_, false));
      host_links_.push_back({inside, port});
    }
    // All agents start at once: one after the other, their start-up would dominate.
    agents_.resize(n_);
    std::vector<std::thread> starting;
    for (int i = 0; i < n_; ++i) {
      starting.emplace_back([this, i] {
        agents_[i] =
            std::make_unique<ProbeAgent>(ns("h" + std::to_string(i)), dir_, "a" + std::to_string(i),
                                         std::vector<std::string>{}, 120s);
      });
    }
    for (auto& t : starting)
      t.join();
    for (const auto& agent : agents_)
      ASSERT_TRUE(agent->ready()) << agent->log();
    std::ofstream out(dir_.file("hosts"));
    out << "# HOST:PORT leaf=NAME\n";
    for (int i = 0; i < n_; ++i)
      out << entry(i) << " leaf=lf" << i / kPerLeaf << "\n";
  }

  bool ip(std::vector<std::string> args) {
    args.insert(args.begin(), {"ip", "-n", ns("fab")});
    auto r = testing::run_checked(args);
    if (!r.ok()) ADD_FAILURE() << r.error().message();
    return r.ok();
  }
  std::string ns(const std::string& suffix) const { return net_.ns_name(suffix); }
  static std::string address(int i) {
    return "10.79." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
  }
  std::string entry(int i) const { return address(i) + ":" + std::to_string(agents_[i]->port()); }

  // Runs the mesh from host 0's namespace; returns its JSON verdict and prints the figures.
  rapidjson::Document run_mesh(const std::string& pattern, const std::string& fault) {
    SubprocessOptions options;
    options.timeout = 600s;
    struct rusage before {
    }, after{};
    getrusage(RUSAGE_CHILDREN, &before);
    const auto start = std::chrono::steady_clock::now();
    auto r = run_subprocess({"ip",
                             "netns",
                             "exec",
                             ns("h0"),
                             FABRIC_PROBE_BINARY,
                             "mesh",
                             "--hosts",
                             dir_.file("hosts"),
                             "--test",
                             "tcp_bw",
                             "-D",
                             "500ms",
                             "--pattern",
                             pattern,
                             "--low",
                             "50",
                             "--json",
                             "--csv",
                             dir_.file(pattern + ".csv"),
                             "--heatmap",
                             dir_.file(pattern + ".svg")},
                            options);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    getrusage(RUSAGE_CHILDREN, &after);
    rapidjson::Document doc;
    EXPECT_TRUE(r.ok()) << r.error().message();
    if (!r.ok()) return doc;
    // 3: a fault was found. Never 2: every agent answered.
    EXPECT_EQ(r->exit_status, 3) << r->stderr_text << r->stdout_text;
    auto parsed = json::parse(r->stdout_text, "mesh output");
    EXPECT_TRUE(parsed.ok()) << r->stdout_text;
    if (!parsed.ok()) return doc;
    doc = std::move(*parsed);
    const auto& test = doc["tests"][0];
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    const double cpu = seconds(after.ru_utime) + seconds(after.ru_stime) -
                       seconds(before.ru_utime) - seconds(before.ru_stime);
    std::printf("fleet: hosts=%d rate_kbit=%d slow_kbit=%d fault=%s pattern=%s "
                "pattern_rounds=%u follow_up_rounds=%u low_results=%u "
                "verdict=\"%s\" wall_s=%.1f coordinator_cpu_s=%.2f children_max_rss_kb=%ld\n",
                n_, rate_kbit_, slow_kbit(), fault.c_str(), pattern.c_str(),
                test["pattern_rounds"].GetUint(), test["follow_up_rounds"].GetUint(),
                test["low_results"].GetUint(), test["verdict"]["text"].GetString(), wall, cpu,
                after.ru_maxrss);
    std::fflush(stdout);
    return doc;
  }

  int slow_kbit() const { return std::max(rate_kbit_ / kSlowdown, kMinSlowKbit); }

  // Shapes a link's egress to `kbit`: the whole shaper the first time, the data's rate after.
  // One `tc -batch` a link keeps the set-up of 256 hosts to 256 tc runs.
  bool shape(const std::string& ns, const std::string& dev, int kbit, bool slow) {
    const bool fresh = shaped_.insert(ns + "/" + dev).second;
    const std::string batch = dir_.file("tc-" + ns + "-" + dev);
    std::ofstream(batch) << (fresh ? shaper_lines(dev, kbit, slow) : tbf_line(dev, kbit, slow));
    auto r = testing::run_checked({"tc", "-n", ns, "-batch", batch});
    if (!r.ok()) ADD_FAILURE() << r.error().message();
    return r.ok();
  }
  bool unshape(const std::string& ns, const std::string& dev) {
    shaped_.erase(ns + "/" + dev);
    auto r = testing::run_checked({"tc", "-n", ns, "qdisc", "del", "dev", dev, "root"});
    if (!r.ok()) ADD_FAILURE() << r.error().message();
    return r.ok();
  }

  int n_ = 0;
  int rate_kbit_ = 0;
  std::unique_ptr<NeighbourTableLimit> neighbours_; // first: restored once the rest is gone
  TestNetwork net_;
  TempDir dir_;
  std::vector<std::unique_ptr<ProbeAgent>> agents_;
  std::vector<std::pair<std::string, std::string>> uplinks_, host_links_;
  std::set<std::string> shaped_; // "namespace/device" of the links with a shaper
};

TEST_F(FleetSimulation, NamesAPlantedSlowNodeThenASlowUplink) {
  const std::size_t limit = 2 * static_cast<std::size_t>(std::ceil(std::log2(n_))) + 2;

  // A slow node: both directions of its veth, in a leaf of its own kind.
  const int slow = n_ / 2 + 3;
  const auto& [inside, port] = host_links_[slow];
  ASSERT_TRUE(shape(ns("h" + std::to_string(slow)), inside, slow_kbit(), true));
  ASSERT_TRUE(shape(ns("fab"), port, slow_kbit(), true));
  {
    auto doc = run_mesh("ring", "node");
    ASSERT_TRUE(doc.IsObject());
    const auto& test = doc["tests"][0];
    const auto& verdict = test["verdict"];
    EXPECT_STREQ(verdict["kind"].GetString(), "node") << verdict["text"].GetString();
    ASSERT_EQ(verdict["hosts"].Size(), 1u);
    EXPECT_EQ(verdict["hosts"][0].GetString(), entry(slow));
    EXPECT_EQ(test["failures"]["count"].GetUint(), 0u);
    EXPECT_LE(test["follow_up_rounds"].GetUint(), limit);
    // Every measured pair is in the CSV; the heatmap has a row per leaf.
    std::string csv = testing::read_text(dir_.file("ring.csv"));
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + test["results"].GetInt());
    std::string svg = testing::read_text(dir_.file("ring.svg"));
    EXPECT_NE(svg.find("!lf" + std::to_string(slow / kPerLeaf)), std::string::npos);
  }
  ASSERT_TRUE(shape(ns("h" + std::to_string(slow)), inside, rate_kbit_, false));
  ASSERT_TRUE(unshape(ns("fab"), port));

  // A slow uplink: pairs inside its leaf stay fast, pairs across it are slow.
  // A leaf past the middle, and never past the last.
  const int leaf = std::min(n_ / kPerLeaf / 2 + 1, n_ / kPerLeaf - 1);
  for (const auto& end : {uplinks_[leaf].first, uplinks_[leaf].second})
    ASSERT_TRUE(shape(ns("fab"), end, slow_kbit(), true));
  {
    auto doc = run_mesh("cross-leaf", "uplink");
    ASSERT_TRUE(doc.IsObject());
    const auto& test = doc["tests"][0];
    const auto& verdict = test["verdict"];
    EXPECT_STREQ(verdict["kind"].GetString(), "uplink") << verdict["text"].GetString();
    EXPECT_STREQ(verdict["leaf"].GetString(), ("lf" + std::to_string(leaf)).c_str());
    EXPECT_LE(test["follow_up_rounds"].GetUint(), limit);
  }
}

} // namespace
} // namespace fabric
