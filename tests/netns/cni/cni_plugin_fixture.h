// The netns tier's setting for the built fabric-cni binary, driven as a runtime drives
// it, against the real kernel and the real reference IPAM plugins (/usr/lib/cni).
//
// Topology per test: a "host" namespace holding a veth pair whose end is the macvlan
// parent (up), and pod namespaces. The plugin runs INSIDE the host namespace, so nothing
// touches the machine's own links; stateDir and host-local's dataDir live in a per-test
// temporary directory. A veth has no RDMA device, so configurations say gidCheck "off".
// What the plugin did is checked independently of it: iproute2's JSON output for links,
// addresses and routes, host-local's reservation files, the state files on disk.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "common/result.h"
#include "tests/netns/cni/cni_runtime.h"
#include "tests/netns/test_network.h"

namespace fabric::testing {

inline constexpr const char* kNetwork = "rdma";
inline constexpr const char* kIfname = "net1";

bool contains(const std::string& text, const std::string& part);
// A JSON string literal; the paths and names tests use need no escapes beyond '"' and '\'.
std::string json_string(const std::string& s);
std::string read_text(const std::string& path);

// A network configuration as a JSON object whose keys tests replace one by one.
class Conf {
public:
  explicit Conf(const std::string& text);
  Conf(const Conf& other);
  // `json_value` is JSON text ("1400", "\"private\"", "{...}").
  Conf& set(const std::string& key, const std::string& json_value);
  Conf& erase(const std::string& key);
  std::string str() const;

private:
  rapidjson::Document doc_;
};

// One link as iproute2 reports it.
struct LinkView {
  std::string name, mac, kind, macvlan_mode, alias;
  int ifindex = 0, mtu = 0;
  bool up = false;
  std::vector<std::string> ipv4; // "10.9.0.2/24"
};

struct RouteView {
  std::string dst, gateway, scope;
  int metric = -1;
};

// `ip -j -d -n NS ARGS...`, parsed.
Result<rapidjson::Document> ip_json(const std::string& ns, std::vector<std::string> args);
std::vector<LinkView> links_in(const std::string& ns);
std::optional<LinkView> link_in(const std::string& ns, const std::string& name);
std::vector<std::string> link_names(const std::string& ns);
// The routes through `dev` in `table` ("main" by default).
std::vector<RouteView> routes_in(const std::string& ns, const std::string& dev,
                                 const std::string& table = "main");
bool has_route(const std::string& ns, const std::string& dev, const std::string& dst,
               const std::string& gateway);
// `ip ARGS...`; fails the test with ip's stderr when it fails.
void run_ip(std::vector<std::string> args);

class CniPluginNetns : public ::testing::Test {
protected:
  void SetUp() override;
  void TearDown() override;

  // A pod namespace; returns its path (CNI_NETNS). Its `ip -n` name is pod_name(suffix).
  std::string add_pod(const std::string& suffix) { return net_.add_namespace(suffix); }
  std::string pod_name(const std::string& suffix) const { return net_.ns_name(suffix); }

  std::string host_local(const std::string& subnet = "10.9.0.0/24",
                         const std::string& range_extra = "") const;
  static std::string static_ipam(const std::string& address = "10.9.1.5/24");
  Conf conf(const std::string& version = "1.0.0") const;

  CniReply run(CniCall call);
  CniReply call(const std::string& command, const std::string& container_id,
                const std::string& netns, const Conf& c, const std::string& args = "",
                const std::string& ifname = kIfname);

  // host-local's reservations: address -> container ID.
  std::map<std::string, std::string> allocations() const;
  bool has_allocation(const std::string& container_id) const;

  std::string state_path(const std::string& container_id, const std::string& ifname = kIfname);
  std::vector<std::string> state_files() const;

  // An IPAM plugin "NAME" in a directory of its own, which call() puts first on
  // CNI_PATH from then on: a shell script body, run with the plugin's stdin and
  // environment.
  void add_ipam_plugin(const std::string& name, const std::string& script);

  // The IPAM plugin "gated": host-local, except that an ADD, once host-local has
  // allocated, writes "<its parent's pid> <its own pid>" to gate_file("allocated") and
  // waits until open_gate() (at most 30 s) before it answers. Its parent is the
  // fabric-cni process running the ADD: a test can act while that ADD is in flight.
  void add_gate();
  Conf gated(Conf c) const;
  std::string gate_file(const std::string& name) const { return dir_ + "/gate-" + name; }
  void open_gate();
  // The two pids of gate_file("allocated"), once it exists (waited for, bounded).
  std::optional<std::pair<int, int>> wait_for_gate();

  // No trace of `container_id`'s attachment: no macvlan (or temporary link) in the pod,
  // the host namespace as SetUp left it, no address reserved, no state.
  void expect_no_attachment(const std::string& container_id, const std::string& pod_ns);

  TestNetwork net_;
  std::string host_, parent_;
  std::string dir_, state_dir_, data_dir_;
  std::optional<CniRuntime> runtime_;
  // CniCall::nic_stand_in and nic_stand_in_sysfs for every call(); empty: none.
  std::string nic_stand_in_, nic_stand_in_sysfs_;
  std::vector<std::string> host_links_;
  std::string cni_path_ = "/usr/lib/cni";
};

// Polls `done` every 10 ms for at most `limit`; whether it became true.
bool wait_until(const std::function<bool()>& done,
                std::chrono::milliseconds limit = std::chrono::seconds(30));

// Exclusive mode: a second veth end in the host namespace stands for the NIC that moves.
// The plugin refuses a veth as an exclusive parent, so call() shows it a sysfs directory
// for that veth with the `device` link of a hardware NIC (CniCall::nic_stand_in).
class CniExclusiveNetns : public CniPluginNetns {
protected:
  void SetUp() override;
  Conf exclusive() const;
  std::string nic_, nic_mac_;
};

} // namespace fabric::testing
