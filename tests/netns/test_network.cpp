#include "tests/netns/test_network.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "common/subprocess.h"

namespace fabric::testing {
namespace {

constexpr int kCapSysAdmin = 21;
constexpr int kCapNetAdmin = 12;

uint64_t effective_capabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

} // namespace

bool can_manage_network() {
  uint64_t caps = effective_capabilities();
  return (caps >> kCapNetAdmin & 1) && (caps >> kCapSysAdmin & 1);
}

std::string skip_reason() {
  return "needs CAP_NET_ADMIN and CAP_SYS_ADMIN (run as root) to create namespaces and veths";
}

Result<std::string> run_checked(const std::vector<std::string>& argv) {
  FABRIC_ASSIGN_OR_RETURN(auto r, run_subprocess(argv));
  if (r.exit_status != 0) {
    std::string cmd;
    for (const auto& a : argv)
      cmd += (cmd.empty() ? "" : " ") + a;
    return Error(ErrorCode::kSystem, cmd,
                 "exit " + std::to_string(r.exit_status) + ": " + r.stderr_text);
  }
  return r.stdout_text;
}

TestNetwork::TestNetwork() {
  static std::atomic<int> counter{0};
  // Interface names are limited to 15 characters: keep the prefix short.
  prefix_ = "fk" + std::to_string(getpid() % 100000) + "x" + std::to_string(counter++);
}

TestNetwork::~TestNetwork() {
  // Deleting a namespace destroys the links inside it (and their veth peers).
  for (const auto& link : host_links_) {
    if (host_link_exists(link)) (void)run_subprocess({"ip", "link", "del", link});
  }
  for (const auto& ns : namespaces_)
    (void)run_subprocess({"ip", "netns", "del", ns});
}

std::string TestNetwork::add_namespace(const std::string& suffix) {
  std::string name = ns_name(suffix);
  auto r = run_checked({"ip", "netns", "add", name});
  if (!r.ok()) {
    ADD_FAILURE() << r.error().message();
    return "";
  }
  namespaces_.push_back(name);
  (void)run_checked({"ip", "-n", name, "link", "set", "lo", "up"});
  return "/var/run/netns/" + name;
}

std::pair<std::string, std::string>
TestNetwork::add_veth(const std::string& suffix, const std::string& ns_a, const std::string& ns_b) {
  std::string a = prefix_ + suffix + "a", b = prefix_ + suffix + "b";
  auto created = run_checked({"ip", "link", "add", a, "type", "veth", "peer", "name", b});
  if (!created.ok()) {
    ADD_FAILURE() << created.error().message();
    return {};
  }
  host_links_.push_back(a);
  for (const auto& [end, ns] : {std::pair{a, ns_a}, std::pair{b, ns_b}}) {
    if (ns.empty()) {
      (void)run_checked({"ip", "link", "set", end, "up"});
      continue;
    }
    auto moved = run_checked({"ip", "link", "set", end, "netns", ns});
    if (!moved.ok()) ADD_FAILURE() << moved.error().message();
    (void)run_checked({"ip", "-n", ns, "link", "set", end, "up"});
  }
  return {a, b};
}

bool namespace_exists(const std::string& name) {
  return access(("/var/run/netns/" + name).c_str(), F_OK) == 0;
}

bool host_link_exists(const std::string& name) {
  return access(("/sys/class/net/" + name).c_str(), F_OK) == 0;
}

} // namespace fabric::testing
