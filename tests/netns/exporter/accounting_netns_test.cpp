// Per-pod accounting end to end on the real kernel's netfilter, with both iptables
// backends: namespaces stand in for pods (registered as fabric-cni registers them) and
// for an external host, all routed through a "node" namespace where the built
// fabric-exporter runs. One pod comes from a fabric-cni record (its primary address beside
// a RoCE address that no packet here uses), the other from `pod_records_dir`, as a pod
// without a RoCE attachment does. The test sends known amounts of UDP and reads the
// counters back through /metrics and, independently, through `ipset list`; deletes a rule
// by hand; removes a pod; restarts the exporter; cleans up.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/fd.h"
#include "common/netns.h"
#include "common/subprocess.h"
#include "exporters/accounting_rules.h"
#include "exporters/iptables.h"
#include "exporters/textfile_parser.h"
#include "tests/netns/probe/probe_processes.h"
#include "tests/netns/test_network.h"
#include "tests/unit/exporter/http_client.h"
#include "tests/unit/exporter/metrics_view.h"

namespace fabric::exporters {
namespace {

using fabric::testing::BackgroundProcess;
using fabric::testing::run_checked;
using fabric::testing::TempDir;
using fabric::testing::TestNetwork;
using fabric::testing::wait_for;
using testing::value;
namespace fs = std::filesystem;

constexpr int kPort = 10900;
constexpr auto kReconcileWait = std::chrono::seconds(20); // reconcile_interval is 1 s

// fabric-cni's record of a pod whose eth0 has `primary_ip`; its RoCE interface's address
// is one no packet of the test uses.
std::string cni_record(const std::string& pod, const std::string& primary_ip) {
  return R"({"schema_version":1,"network":"roce","container_id":")" + pod +
         R"(","ifname":"net1","netns":"/var/run/netns/)" + pod +
         R"(","pod":{"namespace":"train","name":")" + pod +
         R"(","uid":"u"},"mode":"shared","cni_version":"1.0.0","parent":{"netdev":"v","rdma_device":"","rdma_port":1,"pci_address":""},"mac":"02:00:00:00:00:01","mtu":1500,"ips":["10.200.0.9/16"],"primary":{"ifname":"eth0","ips":[")" +
         primary_ip + R"("]},"netconf":"{}"})";
}

std::string pod_record(const std::string& pod, const std::string& ip) {
  return R"({"schema_version":1,"pod":{"namespace":"train","name":")" + pod + R"("},"ips":[")" +
         ip + R"("]})";
}

// A UDP socket made inside `ns` (bound to ip:port when given); the socket stays in that
// namespace whichever thread uses it.
Result<UniqueFd> udp_socket(const std::string& ns, const std::string& ip, uint16_t port) {
  return netns::run_in(ns, [&]() -> Result<UniqueFd> {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd) return Error::from_errno(errno, "socket");
    int size = 4 << 20;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    if (!ip.empty()) {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(port);
      inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
      if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        return Error::from_errno(errno, "bind", ip);
    }
    return fd;
  });
}

void send_udp(int fd, const std::string& ip, uint16_t port, int count, std::size_t size) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  std::string payload(size, 'x');
  for (int i = 0; i < count; ++i) {
    ASSERT_EQ(::sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&addr),
                       sizeof addr),
              static_cast<ssize_t>(size))
        << std::strerror(errno);
  }
}

class AccountingNetns : public ::testing::TestWithParam<const char*> {
protected:
  void SetUp() override {
    if (!fabric::testing::can_manage_network()) GTEST_SKIP() << fabric::testing::skip_reason();
    backend_ = GetParam();
    if (!run_subprocess({"iptables-" + backend_ + "-restore", "--version"}).ok())
      GTEST_SKIP() << "iptables-" << backend_ << "-restore is not installed";
    node_ = net_.add_namespace("node");
    a_ = net_.add_namespace("pa");
    b_ = net_.add_namespace("pb");
    ext_ = net_.add_namespace("ext");
    link("a", "pa", "10.77.1.1", "10.77.1.2");
    link("b", "pb", "10.77.2.1", "10.77.2.2");
    link("e", "ext", "198.51.100.1", "198.51.100.2");
    ASSERT_TRUE(in_node({"sysctl", "-qw", "net.ipv4.ip_forward=1"}).ok());

    fs::create_directories(dir_.file("state/networks/roce"));
    fs::create_directories(dir_.file("pods"));
    write_record("worker-a", "10.77.1.2/24");
    ASSERT_TRUE(
        write_file_atomic(dir_.file("pods/worker-b.json"), pod_record("worker-b", "10.77.2.2"))
            .ok());
    write_config("      - {name: cluster, networks: [10.77.0.0/16]}\n");
  }

  // The exporter's configuration with `classes` (YAML list items, indented by 6).
  void write_config(const std::string& classes) {
    ASSERT_TRUE(write_file_atomic(dir_.file("config.yaml"), "collectors:\n"
                                                            "  rdma: {enabled: false}\n"
                                                            "  pfc: {enabled: false}\n"
                                                            "  dcb: {enabled: false}\n"
                                                            "  accounting:\n"
                                                            "    backend: " +
                                                                backend_ +
                                                                "\n"
                                                                "    reconcile_interval: 1s\n"
                                                                "    cni_state_dir: " +
                                                                dir_.file("state") +
                                                                "\n"
                                                                "    pod_records_dir: " +
                                                                dir_.file("pods") +
                                                                "\n"
                                                                "    classes:\n" +
                                                                classes)
                    .ok());
  }

  void link(const std::string& suffix, const std::string& pod, const std::string& node_ip,
            const std::string& pod_ip) {
    auto [node_end, pod_end] = net_.add_veth(suffix, net_.ns_name("node"), net_.ns_name(pod));
    ASSERT_TRUE(run_checked({"ip", "-n", net_.ns_name("node"), "addr", "add", node_ip + "/24",
                             "dev", node_end})
                    .ok());
    ASSERT_TRUE(
        run_checked({"ip", "-n", net_.ns_name(pod), "addr", "add", pod_ip + "/24", "dev", pod_end})
            .ok());
    ASSERT_TRUE(
        run_checked({"ip", "-n", net_.ns_name(pod), "route", "add", "default", "via", node_ip})
            .ok());
  }

  void write_record(const std::string& pod, const std::string& ip) {
    ASSERT_TRUE(write_file_atomic(dir_.file("state/networks/roce/" + pod + ":net1.json"),
                                  cni_record(pod, ip))
                    .ok());
  }

  Result<std::string> in_node(std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"ip", "netns", "exec", net_.ns_name("node")});
    return run_checked(argv);
  }

  // The rules (not the chain counters or the timestamped comments) of the mangle table.
  std::string rules(const char* family = "ip") {
    std::string out;
    std::istringstream in(save(family));
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("-A ")) out += line + "\n";
    }
    return out;
  }

  std::string save(const char* family = "ip") {
    auto text = in_node({std::string(family) + "tables-" + backend_ + "-save", "-t", "mangle"});
    return text.ok() ? *text : "";
  }

  void start_exporter() {
    exporter_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"ip", "netns", "exec", net_.ns_name("node"),
                                 FABRIC_EXPORTER_BINARY, "--config", dir_.file("config.yaml"),
                                 "--listen", "127.0.0.1:" + std::to_string(kPort), "--log-level",
                                 "info"},
        dir_.file("exporter.out"), dir_.file("exporter.err"));
    ASSERT_TRUE(exporter_->started());
    ASSERT_TRUE(wait_for([&] { return scrape().has_value(); }, std::chrono::seconds(30)))
        << exporter_->stderr_text();
  }

  // One scrape of the exporter in the node namespace, parsed.
  std::optional<std::vector<prometheus::MetricFamily>> scrape() {
    auto response =
        netns::run_in(node_, [] { return testing::http_get(kPort, "/metrics", "", 10); });
    if (!response.ok() || response->status != 200) return std::nullopt;
    auto families = parse_exposition(response->body);
    EXPECT_TRUE(families.ok()) << families.error().message();
    if (!families.ok()) return std::nullopt;
    return std::move(*families);
  }

  double traffic(const std::vector<prometheus::MetricFamily>& f, const std::string& pod,
                 const std::string& klass, const std::string& direction,
                 const std::string& what = "bytes") {
    return value(f, "fabric_pod_traffic_" + what + "_total",
                 {{"namespace", "train"}, {"pod", pod}, {"class", klass}, {"direction", direction}})
        .value_or(-1);
  }

  // `ipset list NAME` in the node, as the ipset program prints it.
  std::string ipset_list(const std::string& name) {
    auto text = in_node({"ipset", "list", name});
    return text.ok() ? *text : "";
  }

  std::string backend_;
  TestNetwork net_;
  TempDir dir_;
  std::string node_, a_, b_, ext_;
  std::unique_ptr<BackgroundProcess> exporter_;
};

TEST_P(AccountingNetns, CountsPodTrafficByClassAndKeepsRulesReconciled) {
  start_exporter();
  auto before = *scrape();
  EXPECT_EQ(value(before, "fabric_accounting_active", {}), 1) << exporter_->stderr_text();
  EXPECT_EQ(value(before, "fabric_accounting_backend_info", {{"backend", backend_}}), 1);
  EXPECT_EQ(value(before, "fabric_accounting_pods", {}), 2);

  auto a = udp_socket(a_, "", 0);
  auto b = udp_socket(b_, "10.77.2.2", 5000);
  auto e = udp_socket(ext_, "198.51.100.2", 5000);
  auto a_rx = udp_socket(a_, "10.77.1.2", 5001);
  ASSERT_TRUE(a.ok() && b.ok() && e.ok() && a_rx.ok());
  constexpr int kDatagrams = 100;
  constexpr std::size_t kSize = 1000;
  send_udp(a->get(), "10.77.2.2", 5000, kDatagrams, kSize);        // pod to pod: cluster
  send_udp(a->get(), "198.51.100.2", 5000, kDatagrams / 2, kSize); // pod to the outside
  send_udp(e->get(), "10.77.1.2", 5001, kDatagrams / 4, kSize);    // outside to the pod

  std::vector<prometheus::MetricFamily> after;
  const double sent = kDatagrams * kSize;
  ASSERT_TRUE(wait_for(
      [&] {
        after = scrape().value_or(after);
        return traffic(after, "worker-b", "cluster", "rx") >= sent;
      },
      std::chrono::seconds(10)));
  EXPECT_GE(traffic(after, "worker-a", "cluster", "tx"), sent);
  EXPECT_GE(traffic(after, "worker-b", "cluster", "rx"), sent);
  EXPECT_GE(traffic(after, "worker-a", "cluster", "tx", "packets"), kDatagrams);
  EXPECT_GE(traffic(after, "worker-a", "external", "tx"), sent / 2);
  EXPECT_GE(traffic(after, "worker-a", "external", "rx"), sent / 4);
  EXPECT_LT(traffic(after, "worker-a", "external", "tx"), sent) << "pod-to-pod is not external";
  EXPECT_EQ(traffic(after, "worker-b", "external", "tx"), 0);

  // The whole scrape, accounting families included, is clean for promtool.
  auto body = netns::run_in(node_, [] { return testing::http_get(kPort, "/metrics", "", 10); });
  ASSERT_TRUE(body.ok()) << body.error().message();
  auto lint = run_subprocess(
      {"promtool", "check", "metrics"},
      {.stdin_text = body->body, .environment = {}, .timeout = std::chrono::seconds(30)});
  ASSERT_TRUE(lint.ok()) << lint.error().message();
  EXPECT_EQ(lint->exit_status, 0) << lint->stdout_text << lint->stderr_text;

  // The kernel's own view of the cluster class's receive set: worker-b's address counted.
  const std::string rx_cluster = ipset_list("fabric-acct-rx4-1");
  EXPECT_NE(rx_cluster.find("10.77.2.2 packets "), std::string::npos) << rx_cluster;
  EXPECT_EQ(rx_cluster.find("10.200.0.9"), std::string::npos) << "not the RoCE address";

  // A rule deleted by hand comes back with the next reconcile.
  const std::vector<std::string> spec = {"-m", "mark", "--mark",      "0x1000/0x3000",
                                         "-m", "set",  "--match-set", "fabric-acct-tx4-1",
                                         "src"};
  const std::string rule = "-A FABRIC-ACCT-TX -m mark --mark 0x1000/0x3000 -m set --match-set "
                           "fabric-acct-tx4-1 src";
  ASSERT_NE(save().find(rule), std::string::npos) << save();
  // -w: the running exporter's reconcile may hold the xtables lock at that moment.
  std::vector<std::string> remove = {"iptables-" + backend_, "-w", "10", "-t", "mangle", "-D",
                                     "FABRIC-ACCT-TX"};
  remove.insert(remove.end(), spec.begin(), spec.end());
  ASSERT_TRUE(in_node(remove).ok());
  ASSERT_EQ(save().find(rule), std::string::npos);
  EXPECT_TRUE(wait_for([&] { return save().find(rule) != std::string::npos; }, kReconcileWait))
      << exporter_->stderr_text();

  // A pod whose record is gone leaves the sets and loses its series; the rules stay as
  // they were.
  const std::string rules_before = rules();
  fs::remove(dir_.file("pods/worker-b.json"));
  EXPECT_TRUE(wait_for(
      [&] { return ipset_list("fabric-acct-rx4-1").find("10.77.2.2") == std::string::npos; },
      kReconcileWait));
  // The pass that emptied the sets publishes its plan right after: wait for that too.
  std::vector<prometheus::MetricFamily> gone;
  EXPECT_TRUE(wait_for(
      [&] {
        gone = scrape().value_or(gone);
        return value(gone, "fabric_accounting_pods", {}) == 1;
      },
      kReconcileWait));
  EXPECT_EQ(traffic(gone, "worker-b", "cluster", "rx"), -1);
  EXPECT_EQ(value(gone, "fabric_accounting_pods", {}), 1);
  EXPECT_GE(traffic(gone, "worker-a", "cluster", "tx"), sent);
  EXPECT_EQ(rules(), rules_before);
}

// The first class that contains an address wins, also where a later class names a
// network inside it or an earlier class names one inside a later class's.
TEST_P(AccountingNetns, ClassesAreMatchedInTheirConfiguredOrder) {
  write_config("      - {name: pod_b, networks: [10.77.2.0/24]}\n"
               "      - {name: cluster, networks: [10.77.0.0/16]}\n"
               "      - {name: shadowed, networks: [10.77.1.0/24, 10.77.0.0/16]}\n");
  start_exporter();
  auto a = udp_socket(a_, "10.77.1.2", 5001);
  auto b = udp_socket(b_, "10.77.2.2", 5000);
  ASSERT_TRUE(a.ok() && b.ok());
  send_udp(a->get(), "10.77.2.2", 5000, 20, 500); // to pod_b's network
  send_udp(b->get(), "10.77.1.2", 5001, 10, 500); // to 10.77.1.0/24: cluster's, not shadowed's
  std::vector<prometheus::MetricFamily> f;
  ASSERT_TRUE(wait_for(
      [&] {
        f = scrape().value_or(f);
        return traffic(f, "worker-a", "pod_b", "rx") >= 5000;
      },
      std::chrono::seconds(10)))
      << exporter_->stderr_text() << ipset_list("fabric-acct-class4");
  EXPECT_GE(traffic(f, "worker-a", "pod_b", "tx"), 10000) << "the more specific first class";
  EXPECT_GE(traffic(f, "worker-b", "cluster", "rx"), 10000) << "from 10.77.1.2: cluster";
  EXPECT_GE(traffic(f, "worker-b", "cluster", "tx"), 5000);
  for (const char* pod : {"worker-a", "worker-b"}) {
    for (const char* direction : {"tx", "rx"})
      EXPECT_EQ(traffic(f, pod, "shadowed", direction), 0) << pod << " " << direction;
  }
  EXPECT_EQ(traffic(f, "worker-a", "cluster", "tx"), 0) << "pod_b came first";
  const std::string map = ipset_list("fabric-acct-class4");
  EXPECT_NE(map.find("10.77.2.0/24 skbmark 0x1000/0x3000"), std::string::npos) << map;
  EXPECT_EQ(map.find("10.77.1.0/24"), std::string::npos) << map;
}

// A class map filled in batches of marked networks, each message larger than one page.
TEST_P(AccountingNetns, AClassOfThreeHundredNetworksIsMappedWhole) {
  std::string networks;
  for (int i = 0; i < 300; ++i)
    networks += (i ? ", " : "") +
                ("10.100." + std::to_string(i / 2) + "." + std::to_string(i % 2 * 128) + "/25");
  write_config("      - {name: many, networks: [" + networks + "]}\n");
  start_exporter();
  ASSERT_TRUE(wait_for(
      [&] {
        auto f = scrape();
        return f && value(*f, "fabric_accounting_active", {}) == 1;
      },
      std::chrono::seconds(10)))
      << exporter_->stderr_text();
  const std::string map = ipset_list("fabric-acct-class4");
  std::size_t marked = 0;
  for (std::size_t at = map.find(" skbmark "); at != std::string::npos;
       at = map.find(" skbmark ", at + 1))
    ++marked;
  EXPECT_EQ(marked, 300u) << exporter_->stderr_text() << map.substr(0, 2000);
  EXPECT_NE(map.find("10.100.149.128/25 skbmark"), std::string::npos) << "the last network";
}

// The rules of the version that classified with one rule per class network (chains
// FABRIC-ACCT-DST and -SRC) are replaced by a reconcile; its sets' counts go on.
TEST_P(AccountingNetns, AnEarlierVersionsRulesAreReplacedAndItsCountsKept) {
  for (const char* direction : {"tx", "rx"}) {
    for (const char* k : {"0", "1"}) {
      const std::string set = std::string("fabric-acct-") + direction + "4-" + k;
      ASSERT_TRUE(in_node({"ipset", "create", set, "hash:ip", "counters"}).ok());
    }
  }
  ASSERT_TRUE(
      in_node({"ipset", "add", "fabric-acct-tx4-1", "10.77.1.2", "packets", "7", "bytes", "7000"})
          .ok());
  const std::string earlier = R"(*mangle
:FABRIC-ACCT-TX - [0:0]
:FABRIC-ACCT-RX - [0:0]
:FABRIC-ACCT-DST - [0:0]
:FABRIC-ACCT-SRC - [0:0]
-A FABRIC-ACCT-DST -j MARK --set-xmark 0x0/0x3000
-A FABRIC-ACCT-DST -d 10.77.0.0/16 -j MARK --set-xmark 0x1000/0x3000
-A FABRIC-ACCT-SRC -j MARK --set-xmark 0x0/0x3000
-A FABRIC-ACCT-SRC -s 10.77.0.0/16 -j MARK --set-xmark 0x1000/0x3000
-A FABRIC-ACCT-TX -m comment --comment "fabric-exporter plan 0123456789abcdef"
-A FABRIC-ACCT-TX -i lo -j RETURN
-A FABRIC-ACCT-RX -o lo -j RETURN
-A FABRIC-ACCT-TX -j FABRIC-ACCT-DST
-A FABRIC-ACCT-RX -j FABRIC-ACCT-SRC
-A FABRIC-ACCT-TX -m mark --mark 0x0/0x3000 -m set --match-set fabric-acct-tx4-0 src
-A FABRIC-ACCT-TX -m mark --mark 0x1000/0x3000 -m set --match-set fabric-acct-tx4-1 src
-A FABRIC-ACCT-RX -m mark --mark 0x0/0x3000 -m set --match-set fabric-acct-rx4-0 dst
-A FABRIC-ACCT-RX -m mark --mark 0x1000/0x3000 -m set --match-set fabric-acct-rx4-1 dst
-A FABRIC-ACCT-RX -j FABRIC-ACCT-DST
-I PREROUTING 1 -m comment --comment "fabric-exporter per-pod accounting" -j FABRIC-ACCT-TX
-I POSTROUTING 1 -m comment --comment "fabric-exporter per-pod accounting" -j FABRIC-ACCT-RX
COMMIT
)";
  auto restored = run_subprocess(
      {"ip", "netns", "exec", net_.ns_name("node"), "iptables-" + backend_ + "-restore",
       "--noflush"},
      {.stdin_text = earlier, .environment = {}, .timeout = std::chrono::seconds(30)});
  ASSERT_TRUE(restored.ok() && restored->exit_status == 0) << save();
  ASSERT_NE(rules().find("FABRIC-ACCT-DST"), std::string::npos);

  start_exporter();
  auto upgraded = *scrape();
  const std::string now = rules();
  EXPECT_EQ(now.find("FABRIC-ACCT-DST"), std::string::npos) << now;
  EXPECT_EQ(now.find("FABRIC-ACCT-SRC"), std::string::npos) << now;
  EXPECT_EQ(now.find("0123456789abcdef"), std::string::npos) << now;
  EXPECT_NE(now.find("--map-set fabric-acct-class4 dst --map-mark"), std::string::npos) << now;
  for (const char* jump : {"-j FABRIC-ACCT-TX\n", "-j FABRIC-ACCT-RX\n"}) {
    std::size_t jumps = 0;
    for (auto at = now.find(jump); at != std::string::npos; at = now.find(jump, at + 1))
      ++jumps;
    EXPECT_EQ(jumps, 1u) << jump << now;
  }
  EXPECT_EQ(traffic(upgraded, "worker-a", "cluster", "tx"), 7000) << "the earlier count";

  auto a = udp_socket(a_, "", 0);
  ASSERT_TRUE(a.ok());
  send_udp(a->get(), "10.77.2.2", 5000, 10, 500);
  std::vector<prometheus::MetricFamily> after;
  EXPECT_TRUE(wait_for(
      [&] {
        after = scrape().value_or(after);
        return traffic(after, "worker-a", "cluster", "tx") >= 7000 + 5000;
      },
      std::chrono::seconds(10)))
      << traffic(after, "worker-a", "cluster", "tx");
  EXPECT_GE(traffic(after, "worker-b", "cluster", "rx"), 5000);
}

// Calico inserts its jump into cali-PREROUTING at the top of mangle PREROUTING, and that
// chain accepts packets of established connections: a jump of ours below it would count
// only each flow's first packets. Arranged as Felix arranges it, on the real netfilter.
TEST_P(AccountingNetns, AJumpBehindCalicosAcceptIsMovedBackToTheTopAndCounted) {
  start_exporter();
  auto a = udp_socket(a_, "", 0);
  auto b = udp_socket(b_, "10.77.2.2", 5000);
  ASSERT_TRUE(a.ok() && b.ok());
  send_udp(a->get(), "10.77.2.2", 5000, 10, 500); // the flow is established from here on
  std::vector<prometheus::MetricFamily> before;
  ASSERT_TRUE(wait_for(
      [&] {
        before = scrape().value_or(before);
        return traffic(before, "worker-a", "cluster", "tx") >= 5000;
      },
      std::chrono::seconds(10)));
  const std::string iptables = "iptables-" + backend_;
  ASSERT_TRUE(in_node({iptables, "-w", "10", "-t", "mangle", "-N", "cali-PREROUTING"}).ok());
  ASSERT_TRUE(in_node({iptables, "-w", "10", "-t", "mangle", "-A", "cali-PREROUTING", "-m",
                       "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"})
                  .ok());
  ASSERT_TRUE(in_node({iptables, "-w", "10", "-t", "mangle", "-A", "cali-PREROUTING", "-m", "mark",
                       "--mark", "0x10000/0x10000", "-j", "ACCEPT"})
                  .ok());
  ASSERT_TRUE(in_node({iptables, "-w", "10", "-t", "mangle", "-I", "PREROUTING", "1", "-m",
                       "comment", "--comment", "cali:6gwbT8clXdHdC1b1", "-j", "cali-PREROUTING"})
                  .ok());
  // Ours first again: the first PREROUTING rule is the accounting's jump, Calico's after.
  auto first_prerouting = [&] {
    const std::string all = rules();
    const auto at = all.find("-A PREROUTING ");
    return at == std::string::npos ? std::string() : all.substr(at, all.find('\n', at) - at);
  };
  EXPECT_TRUE(
      wait_for([&] { return first_prerouting().find("FABRIC-ACCT-TX") != std::string::npos; },
               kReconcileWait))
      << rules();
  EXPECT_NE(rules().find("-j cali-PREROUTING"), std::string::npos) << "Calico's jump stays";
  send_udp(a->get(), "10.77.2.2", 5000, 10, 500);
  std::vector<prometheus::MetricFamily> after;
  const double counted = traffic(before, "worker-a", "cluster", "tx");
  EXPECT_TRUE(wait_for(
      [&] {
        after = scrape().value_or(after);
        return traffic(after, "worker-a", "cluster", "tx") >= counted + 5000;
      },
      std::chrono::seconds(10)))
      << "established packets are counted again";
  EXPECT_GE(value(after, "fabric_accounting_jump_position_lost_total", {}).value_or(0), 1);
}

TEST_P(AccountingNetns, ARestartAdoptsItsRulesAndCleanupRemovesOnlyThem) {
  start_exporter();
  auto a = udp_socket(a_, "", 0);
  auto b = udp_socket(b_, "10.77.2.2", 5000);
  ASSERT_TRUE(a.ok() && b.ok());
  send_udp(a->get(), "10.77.2.2", 5000, 10, 500);
  std::vector<prometheus::MetricFamily> first;
  ASSERT_TRUE(wait_for(
      [&] {
        first = scrape().value_or(first);
        return traffic(first, "worker-a", "cluster", "tx") >= 5000;
      },
      std::chrono::seconds(10)));
  const std::string installed = rules();
  ASSERT_TRUE(exporter_->stop(SIGTERM, std::chrono::seconds(10)).ok());

  start_exporter();
  auto second = *scrape();
  EXPECT_EQ(value(second, "fabric_accounting_reconciles_total", {{"result", "applied"}}), 0)
      << "the restart found its rules and changed nothing";
  EXPECT_GE(traffic(second, "worker-a", "cluster", "tx"),
            traffic(first, "worker-a", "cluster", "tx"))
      << "counts go on";
  EXPECT_EQ(rules(), installed) << "no rule duplicated or rewritten";
  ASSERT_TRUE(exporter_->stop(SIGTERM, std::chrono::seconds(10)).ok());

  // Things that are not ours, in the same table, chains and accounting namespace.
  ASSERT_TRUE(in_node({"iptables-" + backend_, "-t", "mangle", "-N", "KEEP-ME"}).ok());
  ASSERT_TRUE(
      in_node({"iptables-" + backend_, "-t", "mangle", "-A", "POSTROUTING", "-j", "KEEP-ME"}).ok());
  ASSERT_TRUE(in_node({"nfacct", "add", "keep_me"}).ok());
  ASSERT_TRUE(in_node({"ipset", "create", "keep-me", "hash:ip"}).ok());
  // An object of the versions that counted with one nfacct object per pod.
  ASSERT_TRUE(in_node({"nfacct", "add", "fabric_acct_00112233aabbccdd"}).ok());

  auto cleanup = in_node({FABRIC_EXPORTER_BINARY, "--cleanup"});
  ASSERT_TRUE(cleanup.ok()) << cleanup.error().message();
  EXPECT_NE(cleanup->find("removed"), std::string::npos) << *cleanup;
  for (const char* family : {"ip", "ip6"}) {
    const std::string left = save(family);
    EXPECT_EQ(left.find("FABRIC-ACCT"), std::string::npos) << left;
    EXPECT_EQ(left.find("fabric-exporter"), std::string::npos) << left;
  }
  EXPECT_NE(save().find("-A POSTROUTING -j KEEP-ME"), std::string::npos) << save();
  auto objects = in_node({"nfacct", "list"});
  ASSERT_TRUE(objects.ok());
  EXPECT_EQ(objects->find("fabric_acct_"), std::string::npos) << *objects;
  EXPECT_NE(objects->find("keep_me"), std::string::npos) << *objects;
  auto sets = in_node({"ipset", "list", "-n"});
  ASSERT_TRUE(sets.ok());
  EXPECT_EQ(sets->find("fabric-acct-"), std::string::npos) << *sets;
  EXPECT_NE(sets->find("keep-me"), std::string::npos) << *sets;
}

TEST_P(AccountingNetns, MarkBitsInUseOnTheHostStopAccountingAndSayWhich) {
  // kube-proxy's masquerade bit does not collide with the default mask; a rule on 0x2000 does.
  ASSERT_TRUE(in_node({"iptables-" + backend_, "-t", "nat", "-N", "KUBE-MARK-MASQ"}).ok());
  ASSERT_TRUE(in_node({"iptables-" + backend_, "-t", "nat", "-A", "KUBE-MARK-MASQ", "-j", "MARK",
                       "--or-mark", "0x4000"})
                  .ok());
  auto once = in_node({FABRIC_EXPORTER_BINARY, "--config", dir_.file("config.yaml"), "--once"});
  ASSERT_TRUE(once.ok()) << once.error().message();
  EXPECT_NE(once->find("fabric_accounting_active 1"), std::string::npos);
  ASSERT_TRUE(in_node({FABRIC_EXPORTER_BINARY, "--cleanup"}).ok());

  ASSERT_TRUE(in_node({"iptables-" + backend_, "-t", "mangle", "-A", "FORWARD", "-j", "MARK",
                       "--set-xmark", "0x2000/0x2000"})
                  .ok());
  auto refused =
      run_subprocess({"ip", "netns", "exec", net_.ns_name("node"), FABRIC_EXPORTER_BINARY,
                      "--config", dir_.file("config.yaml"), "--once"});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->exit_status, 0) << "the other collectors still serve";
  EXPECT_NE(refused->stdout_text.find("fabric_accounting_active 0"), std::string::npos);
  EXPECT_NE(refused->stderr_text.find("--set-xmark 0x2000/0x2000"), std::string::npos)
      << refused->stderr_text;
  EXPECT_NE(refused->stderr_text.find("mark_mask"), std::string::npos)
      << "the hint says what to change";
  EXPECT_EQ(save().find("FABRIC-ACCT"), std::string::npos) << "nothing installed";
}

// A policy-routing rule on the accounting's mark bits stops it as an iptables rule does,
// found over netlink: the image has no `ip`, so the exporter runs here with the iptables
// programs alone on its PATH.
TEST_P(AccountingNetns, APolicyRoutingRuleOnTheMarkBitsIsFoundWithoutIproute2) {
  ASSERT_TRUE(in_node({"ip", "rule", "add", "fwmark", "0x1000/0x1000", "lookup", "100"}).ok());
  const std::string bin = dir_.file("bin");
  fs::create_directories(bin);
  for (const char* dir : {"/usr/sbin", "/sbin"}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename();
      if ((name.starts_with("iptables") || name.starts_with("ip6tables")) &&
          !fs::exists(bin + "/" + name))
        fs::create_symlink(entry.path(), bin + "/" + name);
    }
  }
  auto refused =
      run_subprocess({"ip", "netns", "exec", net_.ns_name("node"), "env", "PATH=" + bin,
                      FABRIC_EXPORTER_BINARY, "--config", dir_.file("config.yaml"), "--once"});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->exit_status, 0) << refused->stderr_text;
  EXPECT_NE(refused->stdout_text.find("fabric_accounting_active 0"), std::string::npos)
      << refused->stderr_text;
  EXPECT_NE(refused->stderr_text.find("fwmark 0x1000/0x1000"), std::string::npos)
      << refused->stderr_text;
  EXPECT_EQ(save().find("FABRIC-ACCT"), std::string::npos) << "nothing installed";
}

// A first pass that fails (here: the pod records directory is not there yet, as a mount
// that comes late at boot) no longer leaves accounting off until a restart: the exporter
// serves fabric_accounting_active 0 and retries, and accounts once the pass succeeds.
TEST_P(AccountingNetns, AFailedFirstPassIsRetriedUntilAccountingStarts) {
  const std::string records = dir_.file("pods");
  fs::rename(records, dir_.file("pods.later"));
  ASSERT_TRUE(write_file_atomic(records, "not a directory yet\n").ok());
  start_exporter();
  auto first = scrape();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(value(*first, "fabric_accounting_active", {}), 0);
  EXPECT_NE(exporter_->stderr_text().find("retrying"), std::string::npos)
      << exporter_->stderr_text();

  fs::remove(records);
  fs::rename(dir_.file("pods.later"), records);
  ASSERT_TRUE(write_file_atomic(records + "/ext.json",
                                R"({"schema_version": 1, "pod": {"namespace": "train", )"
                                R"("name": "outside"}, "ips": ["198.51.100.2"]})")
                  .ok());
  ASSERT_TRUE(wait_for(
      [&] {
        auto f = scrape();
        return f && value(*f, "fabric_accounting_active", {}) == 1 &&
               value(*f, "fabric_accounting_pods", {}) == 3;
      },
      kReconcileWait))
      << exporter_->stderr_text();
  EXPECT_NE(ipset_list("fabric-acct-tx4-0").find("198.51.100.2"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, AccountingNetns, ::testing::Values("legacy", "nft"),
                         [](const auto& test) { return std::string(test.param); });

// backend: auto on a node where kubelet has set up its canary chain with one backend only:
// the exporter must write its rules where kube-proxy's are, whichever backend that is.
TEST(AccountingBackendNetns, AutoFollowsTheBackendKubeletUses) {
  if (!fabric::testing::can_manage_network()) GTEST_SKIP() << fabric::testing::skip_reason();
  for (Backend kubelet : {Backend::kLegacy, Backend::kNft}) {
    const std::string name(backend_name(kubelet));
    TestNetwork net;
    const std::string node = net.add_namespace("auto" + name);
    auto created = run_checked({"ip", "netns", "exec", net.ns_name("auto" + name),
                                "iptables-" + name, "-t", "mangle", "-N", "KUBE-KUBELET-CANARY"});
    ASSERT_TRUE(created.ok()) << created.error().message();
    auto detected = netns::run_in(node, [] { return detect_backend(); });
    ASSERT_TRUE(detected.ok()) << detected.error().message();
    EXPECT_EQ(backend_name(*detected), name);
  }
}

} // namespace
} // namespace fabric::exporters
