// fabric-probe lint against the real kernel in a test namespace: DCB netlink on a veth
// (EOPNOTSUPP: the PFC check says unknown, not fail), IPv4 addresses from getifaddrs,
// the veth's macvlan upper found through the namespace's sysfs, and the RDMA netns mode
// as the kernel answers it. The host has no RDMA device, so the RDMA side is a GID table
// under --root that names the veth; sysfs's class/net in that root is the real one.
#include <stdlib.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/subprocess.h"
#include "tests/netns/test_network.h"

namespace fabric::probes {
namespace {

namespace fs = std::filesystem;
using fabric::testing::run_checked;
using fabric::testing::TestNetwork;

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

// sysfs's form of the GID ::ffff:10.231.0.N.
std::string mapped_gid(int last_octet) {
  char text[48];
  std::snprintf(text, sizeof text, "0000:0000:0000:0000:0000:ffff:0ae7:00%02x", last_octet);
  return text;
}

struct Check {
  std::string verdict;
  std::string message;
};

class LintNetns : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fabric::testing::can_manage_network()) GTEST_SKIP() << fabric::testing::skip_reason();
    net_.add_namespace("lint");
    ns_ = net_.ns_name("lint");
    dev_ = net_.add_veth("l", ns_, ns_).first;
    ASSERT_FALSE(dev_.empty());
    mv_ = net_.prefix() + "mv";
    ip({"addr", "add", "10.231.0.1/24", "dev", dev_});
    ip({"link", "add", mv_, "link", dev_, "type", "macvlan", "mode", "bridge"});
    ip({"addr", "add", "10.231.0.5/24", "dev", mv_});
    ip({"link", "set", mv_, "up"});

    char dir[] = "/tmp/fabric-lint-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    // fake0 port 1 as the kernel would publish it for a RoCE NIC on the veth: the
    // default GID, then RoCE v2 GIDs for the veth's and the macvlan's addresses.
    const fs::path port = root_ / "sys/class/infiniband/fake0/ports/1";
    write(port / "link_layer", "Ethernet");
    auto gid = [&](int index, const std::string& value, const std::string& type,
                   const std::string& netdev) {
      write(port / "gids" / std::to_string(index), value);
      write(port / "gid_attrs/types" / std::to_string(index), type);
      write(port / "gid_attrs/ndevs" / std::to_string(index), netdev);
    };
    gid(0, "fe80:0000:0000:0000:0000:00ff:fe00:0001", "IB/RoCE v1", dev_);
    gid(1, mapped_gid(1), "RoCE v2", dev_);
    gid(2, mapped_gid(5), "RoCE v2", mv_);
    // `ip netns exec` mounts the namespace's own sysfs on /sys: this link sees its netdevs.
    fs::create_directory_symlink("/sys/class/net", root_ / "sys/class/net");
    // The memlock limit is read from ROOT/proc/self/limits: through this link, lint's own.
    fs::create_directory_symlink("/proc", root_ / "proc");
  }

  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  void ip(std::vector<std::string> args) {
    args.insert(args.begin(), {"ip", "-n", ns_});
    auto r = run_checked(args);
    ASSERT_TRUE(r.ok()) << r.error().message();
  }

  // Runs lint in the namespace; the checks by "id subject".
  std::map<std::string, Check> lint(int expected_status, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {"ip",   "netns",  "exec",   ns_,           FABRIC_PROBE_BINARY,
                                     "lint", "--json", "--root", root_.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = run_subprocess(argv);
    std::map<std::string, Check> checks;
    if (!r.ok()) {
      ADD_FAILURE() << r.error().message();
      return checks;
    }
    EXPECT_EQ(r->exit_status, expected_status) << r->stdout_text << r->stderr_text;
    auto doc = json::parse(r->stdout_text, "lint output");
    if (!doc.ok()) {
      ADD_FAILURE() << doc.error().message() << "\n" << r->stderr_text;
      return checks;
    }
    for (const auto& c : (*doc)["checks"].GetArray()) {
      checks[std::string(c["id"].GetString()) + " " + c["subject"].GetString()] =
          Check{c["verdict"].GetString(), c["message"].GetString()};
    }
    return checks;
  }

  TestNetwork net_;
  std::string ns_, dev_, mv_;
  fs::path root_;
};

#define EXPECT_CHECK(checks, key, verdict_text)                                                    \
  do {                                                                                             \
    auto it_ = (checks).find(key);                                                                 \
    ASSERT_NE(it_, (checks).end()) << "no check " << (key);                                        \
    EXPECT_EQ(it_->second.verdict, verdict_text) << (key) << ": " << it_->second.message;          \
  } while (0)

TEST_F(LintNetns, PfcOnVethIsUnknownAndGidsOfVethAndMacvlanPass) {
  // A memlock floor of 1 byte: this test is not about the host's limit.
  auto checks = lint(0, {"--min-memlock", "1"});
  EXPECT_CHECK(checks, "roce_ports node", "pass");
  EXPECT_CHECK(checks, "pfc_on_roce_priority " + dev_, "unknown");
  EXPECT_NE(checks["pfc_on_roce_priority " + dev_].message.find("no DCB support (EOPNOTSUPP)"),
            std::string::npos)
      << checks["pfc_on_roce_priority " + dev_].message;
  EXPECT_CHECK(checks, "roce_v2_gid " + dev_ + " 10.231.0.1", "pass");
  // The macvlan is found as the veth's upper in the namespace's sysfs.
  EXPECT_CHECK(checks, "roce_v2_gid " + mv_ + " 10.231.0.5", "pass");
  // libibverbs does not know fake0: the MTU cannot be compared, which is not a failure.
  EXPECT_CHECK(checks, "mtu_match fake0/1 " + dev_, "unknown");
  // No RDMA-CM configfs under the root.
  EXPECT_CHECK(checks, "rdma_cm_roce_mode fake0", "unknown");
  EXPECT_CHECK(checks, "memlock node", "pass");
}

TEST_F(LintNetns, AddressWithoutGidFailsWithExit3) {
  ip({"addr", "add", "10.231.0.9/24", "dev", dev_});
  auto checks = lint(3, {"--min-memlock", "1"});
  EXPECT_CHECK(checks, "roce_v2_gid " + dev_ + " 10.231.0.9", "fail");
  EXPECT_CHECK(checks, "roce_v2_gid " + dev_ + " 10.231.0.1", "pass");
}

// Under --root the mode is the root's ib_core parameter, whatever this kernel's is.
TEST_F(LintNetns, NetnsModeIsTheRoots) {
  write(root_ / "sys/module/ib_core/parameters/netns_mode", "N");
  auto checks = lint(0, {"--min-memlock", "1"});
  auto it = checks.find("rdma_netns_mode rdma");
  ASSERT_NE(it, checks.end());
  EXPECT_EQ(it->second.verdict, "pass");
  EXPECT_NE(it->second.message.find("RDMA netns mode exclusive"), std::string::npos)
      << it->second.message;
}

TEST_F(LintNetns, MemlockIsTheProcessLimit) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_MEMLOCK, &limit), 0);
  if (limit.rlim_cur == RLIM_INFINITY) GTEST_SKIP() << "memlock is unlimited here";
  // One byte above the soft limit `ip netns exec` passes on: memlock must fail.
  auto checks = lint(3, {"--min-memlock", std::to_string(limit.rlim_cur + 1)});
  EXPECT_CHECK(checks, "memlock node", "fail");
  EXPECT_NE(checks["memlock node"].message.find(std::to_string(limit.rlim_cur) + " bytes"),
            std::string::npos)
      << checks["memlock node"].message;
}

TEST_F(LintNetns, TextOutputHasAlignedRowsWithinATerminal) {
  auto r = run_subprocess({"ip", "netns", "exec", ns_, FABRIC_PROBE_BINARY, "lint", "--root",
                           root_.string(), "--min-memlock", "1"});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_status, 0) << r->stdout_text << r->stderr_text;
  std::istringstream lines(r->stdout_text);
  std::string line;
  std::size_t id_column = std::string::npos;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.find(" checks: ") != std::string::npos) break;
    EXPECT_LT(line.size(), 100u) << "wider than a terminal: " << line;
    if (line.starts_with(' ')) continue; // a long message's next line
    // Every row's id starts in the same column, after the padded verdict.
    std::size_t col = line.find_first_not_of(' ', line.find(' '));
    if (id_column == std::string::npos) id_column = col;
    EXPECT_EQ(col, id_column) << line;
    ++rows;
    if (line.find("pfc_on_roce_priority") != std::string::npos) {
      EXPECT_EQ(line.rfind("unknown ", 0), 0u) << line;
    }
  }
  EXPECT_GE(rows, 6);
}

} // namespace
} // namespace fabric::probes
