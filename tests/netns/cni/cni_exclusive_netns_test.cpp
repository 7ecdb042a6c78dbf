// Exclusive mode, the built fabric-cni driven as a runtime drives it: a veth is refused as
// the NIC, and the NIC (a veth end standing for it, shown to the plugin with a hardware
// NIC's sysfs `device` link; cni_plugin_fixture.h) moves into the pod and back, with its
// MTU and alias restored; DEL without a record moves only what this attachment moved; an ADD
// killed by the runtime's deadline is undone from the NIC's mark; ADD and DEL of one
// container never leave an address in use released.
//
// The move-back after the pod's namespace is destroyed cannot be tested here: a veth dies
// with its namespace. The vm tier tests it on the lab VM's virtio NIC
// (tests/vm/cni/cni_vm_test.sh).
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "cni/link_mark.h"
#include "tests/netns/cni/cni_plugin_fixture.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;

// A veth is no NIC: moving its host end into the pod would cut the host's side of it off
// and DEL would bring it back down. ADD refuses it before anything changes.
TEST_F(CniExclusiveNetns, AVethParentIsRefusedAndLeftAsItWas) {
  nic_stand_in_.clear(); // the plugin sees the real sysfs: the veth has no `device` link
  run_ip({"-n", host_, "link", "set", nic_, "up"});
  run_ip({"-n", host_, "addr", "add", "10.9.7.1/24", "dev", nic_});
  auto before = link_in(host_, nic_);
  ASSERT_TRUE(before);
  const std::string pod = add_pod("pod");

  CniReply add = call("ADD", "c1", pod, exclusive());
  EXPECT_FALSE(add.ok());
  EXPECT_EQ(add.code(), 7) << add.describe(); // invalid network configuration
  EXPECT_TRUE(contains(add.msg(),
                       "the parent " + nic_ + " is a veth (no /sys/class/net/" + nic_ + "/device)"))
      << add.describe();
  EXPECT_TRUE(contains(add.msg(), "moves a physical NIC or an SR-IOV VF")) << add.describe();

  auto after = link_in(host_, nic_);
  ASSERT_TRUE(after) << nic_ << " left the host";
  EXPECT_EQ(after->ifindex, before->ifindex);
  EXPECT_EQ(after->mac, before->mac);
  EXPECT_TRUE(after->up);
  EXPECT_EQ(after->mtu, before->mtu);
  EXPECT_EQ(after->ipv4, std::vector<std::string>{"10.9.7.1/24"});
  EXPECT_EQ(after->alias, before->alias);
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
}

TEST_F(CniExclusiveNetns, TheDeviceMovesIntoThePodAndBackOnDel) {
  const std::string pod = add_pod("pod");
  CniReply add = call("ADD", "c1", pod, exclusive());
  ASSERT_TRUE(add.ok()) << add.describe();
  auto result = add.json();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(std::string((*result)["interfaces"][0]["mac"].GetString()), nic_mac_);

  EXPECT_FALSE(link_in(host_, nic_)) << nic_ << " left the host";
  auto moved = link_in(pod_name("pod"), kIfname);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->mac, nic_mac_) << "the very device, not a new one";
  EXPECT_EQ(moved->kind, "veth");
  EXPECT_TRUE(moved->up);
  EXPECT_EQ(moved->ipv4, std::vector<std::string>{"10.9.0.2/24"});

  CniReply del = call("DEL", "c1", pod, exclusive());
  EXPECT_TRUE(del.ok()) << del.describe();
  auto back = link_in(host_, nic_);
  ASSERT_TRUE(back) << nic_ << " is back under its own name";
  EXPECT_EQ(back->mac, nic_mac_);
  EXPECT_FALSE(back->up);
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
}

TEST_F(CniExclusiveNetns, AnIpamFailureAfterTheMoveMovesTheDeviceBack) {
  const std::string taken = add_pod("taken"), pod = add_pod("pod");
  const std::string one_address =
      host_local("10.9.6.0/30", ",\"rangeStart\":\"10.9.6.2\",\"rangeEnd\":\"10.9.6.2\"");
  Conf shared = conf();
  shared.set("ipam", one_address);
  ASSERT_TRUE(call("ADD", "taker", taken, shared).ok());

  Conf cf = exclusive();
  cf.set("ipam", one_address);
  CniReply add = call("ADD", "c1", pod, cf);
  EXPECT_FALSE(add.ok());
  EXPECT_TRUE(contains(add.msg(), "no IP addresses available")) << add.describe();
  auto back = link_in(host_, nic_);
  ASSERT_TRUE(back) << nic_ << " was moved back under its own name";
  EXPECT_EQ(back->mac, nic_mac_);
  EXPECT_TRUE(back->ipv4.empty());
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  EXPECT_FALSE(has_allocation("c1"));
  EXPECT_FALSE(fs::exists(state_path("c1")));
}

// The NIC comes back as it left: its MTU (the configuration changed it in the pod) and
// the alias an operator gave it, after DEL and after a rollback alike.
TEST_F(CniExclusiveNetns, MtuAndAliasAreRestoredOnDelAndOnRollback) {
  run_ip({"-n", host_, "link", "set", nic_, "alias", "uplink to tor-3"});
  const std::string pod = add_pod("pod");
  Conf cf = exclusive();
  cf.set("mtu", "1400");
  CniReply add = call("ADD", "c1", pod, cf);
  ASSERT_TRUE(add.ok()) << add.describe();
  auto moved = link_in(pod_name("pod"), kIfname);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->mtu, 1400);
  EXPECT_TRUE(cni::marks_attachment(moved->alias, "c1", kIfname)) << moved->alias;
  EXPECT_TRUE(contains(moved->alias, "host=" + nic_ + " mtu=1500")) << moved->alias;

  ASSERT_TRUE(call("DEL", "c1", pod, cf).ok());
  auto back = link_in(host_, nic_);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->mtu, 1500) << "the host MTU is restored";
  EXPECT_EQ(back->alias, "uplink to tor-3");
  EXPECT_FALSE(back->up);

  // A failure after the MTU was set (the only address is taken) rolls it back too.
  const std::string one_address =
      host_local("10.9.6.0/30", ",\"rangeStart\":\"10.9.6.2\",\"rangeEnd\":\"10.9.6.2\"");
  Conf taker = conf();
  taker.set("ipam", one_address);
  ASSERT_TRUE(call("ADD", "taker", add_pod("taken"), taker).ok());
  cf.set("ipam", one_address);
  CniReply failed = call("ADD", "c2", pod, cf);
  EXPECT_FALSE(failed.ok());
  auto rolled_back = link_in(host_, nic_);
  ASSERT_TRUE(rolled_back) << failed.describe();
  EXPECT_EQ(rolled_back->mtu, 1500);
  EXPECT_EQ(rolled_back->alias, "uplink to tor-3");
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
}

// The pod already had CNI_IFNAME (another plugin's veth), so ADD failed before moving
// anything and left no record. DEL must succeed and leave that interface as it is: a
// runtime retries a failing DEL for ever, and the pod stays stuck terminating.
TEST_F(CniExclusiveNetns, DelWithoutStateLeavesAForeignInterfaceAlone) {
  const std::string pod = add_pod("pod");
  run_ip({"-n", pod_name("pod"), "link", "add", kIfname, "type", "veth", "peer", "name", "peer1"});
  run_ip({"-n", pod_name("pod"), "link", "set", kIfname, "up"});
  CniReply add = call("ADD", "c1", pod, exclusive());
  EXPECT_EQ(add.code(), 101) << add.describe();
  ASSERT_TRUE(link_in(host_, nic_)) << "nothing moved";
  for (int attempt = 0; attempt < 2; ++attempt) {
    CniReply del = call("DEL", "c1", pod, exclusive());
    EXPECT_TRUE(del.ok()) << del.describe();
  }
  auto foreign = link_in(pod_name("pod"), kIfname);
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->kind, "veth");
  EXPECT_TRUE(foreign->up) << "DEL did not set another plugin's interface down";
  EXPECT_EQ(link_names(host_), host_links_);
}

// The runtime's deadline kills ADD after the NIC moved and the address was allocated:
// no record. DEL finds on the NIC itself what to undo.
TEST_F(CniExclusiveNetns, AnAddKilledAfterTheMoveIsUndoneByDelWithoutState) {
  add_gate();
  const std::string pod = add_pod("pod");
  Conf cf = gated(exclusive());
  cf.set("mtu", "1400");
  std::thread add([&] { call("ADD", "c1", pod, cf); });
  auto pids = wait_for_gate();
  ASSERT_TRUE(pids) << "the ADD never reached IPAM";
  ::kill(pids->first, SIGKILL);  // fabric-cni
  ::kill(pids->second, SIGKILL); // the gate, which would wait for nothing
  add.join();
  ASSERT_FALSE(fs::exists(state_path("c1"))) << "killed before the record";
  auto in_pod = link_in(pod_name("pod"), kIfname);
  ASSERT_TRUE(in_pod) << "killed after the move";
  ASSERT_EQ(in_pod->mtu, 1400);
  ASSERT_TRUE(has_allocation("c1"));

  CniReply del = call("DEL", "c1", pod, cf);
  EXPECT_TRUE(del.ok()) << del.describe();
  auto back = link_in(host_, nic_);
  ASSERT_TRUE(back) << nic_ << " is back under its host name";
  EXPECT_EQ(back->mac, nic_mac_);
  EXPECT_EQ(back->mtu, 1500);
  EXPECT_EQ(back->alias, "");
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
}

// Processes holding one of the plugin's lock files open.
std::set<int> lock_holders(const std::string& state_dir) {
  std::set<int> pids;
  const std::string locks = state_dir + "/locks/";
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    for (const auto& fd : fs::directory_iterator(proc.path() / "fd", ec)) {
      auto target = fs::read_symlink(fd.path(), ec);
      if (!ec && target.string().rfind(locks, 0) == 0) pids.insert(std::stoi(pid));
    }
  }
  return pids;
}

// The runtime gave up on an ADD and sent DEL while that ADD still ran. Before, DEL
// decided from "no record" without any lock and released the address the ADD then
// configured and recorded: a pod with an address the IPAM would hand to the next pod.
// Now DEL waits for the ADD (the attachment's lock) and releases what it recorded.
TEST_F(CniExclusiveNetns, DelDuringAnAddWaitsAndReleasesWhatTheAddRecorded) {
  add_gate();
  const std::string pod = add_pod("pod");
  const Conf cf = gated(exclusive());
  CniReply added, deleted;
  std::thread add([&] { added = call("ADD", "c1", pod, cf); });
  ASSERT_TRUE(wait_for_gate()) << "the ADD never reached IPAM";
  std::atomic<bool> del_done{false};
  std::thread del([&] {
    deleted = call("DEL", "c1", pod, cf);
    del_done = true;
  });
  // DEL either finishes (it took no lock) or waits on one the ADD holds.
  EXPECT_TRUE(wait_until([&] { return del_done || lock_holders(state_dir_).size() >= 2; }));
  EXPECT_TRUE(has_allocation("c1")) << "DEL released the address while ADD was using it";
  open_gate();
  add.join();
  del.join();
  EXPECT_TRUE(added.ok()) << added.describe();
  EXPECT_TRUE(deleted.ok()) << deleted.describe();
  // DEL came last: nothing of the attachment is left, and nothing half.
  auto back = link_in(host_, nic_);
  ASSERT_TRUE(back) << "the NIC is back on the host";
  EXPECT_EQ(link_names(pod_name("pod")), std::vector<std::string>{"lo"});
  expect_no_attachment("c1", pod_name("pod"));
}

// The same race left to the scheduler, many times: after each ADD/DEL pair, the
// attachment is either whole (record, NIC in the pod with the allocated address) or
// gone (no record, no allocation, NIC on the host), never an address in use that IPAM
// considers free.
TEST_F(CniExclusiveNetns, ConcurrentAddAndDelOfOneContainerStayConsistent) {
  const std::string pod = add_pod("pod");
  const Conf cf = exclusive();
  constexpr int kRounds = 12;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string id = "r" + std::to_string(round);
    CniReply added, deleted;
    std::thread add([&] { added = call("ADD", id, pod, cf); });
    std::thread del([&] { deleted = call("DEL", id, pod, cf); });
    add.join();
    del.join();
    EXPECT_TRUE(deleted.ok()) << deleted.describe();
    const bool recorded = fs::exists(state_path(id));
    auto in_pod = link_in(pod_name("pod"), kIfname);
    auto owned = allocations();
    std::string allocated;
    for (const auto& [ip, owner] : owned) {
      if (owner == id) allocated = ip;
    }
    if (recorded) {
      ASSERT_TRUE(in_pod) << "recorded, but the NIC is not in the pod";
      ASSERT_FALSE(allocated.empty()) << "the pod has an address IPAM considers free";
      EXPECT_EQ(in_pod->ipv4, std::vector<std::string>{allocated + "/24"});
      ASSERT_TRUE(call("DEL", id, pod, cf).ok());
    } else {
      EXPECT_FALSE(in_pod) << "the NIC is in the pod without a record";
      EXPECT_TRUE(allocated.empty()) << "an address held without a record: " << allocated;
    }
    ASSERT_TRUE(link_in(host_, nic_)) << "round ends with the NIC on the host";
  }
  EXPECT_TRUE(allocations().empty());
}

} // namespace
} // namespace fabric::testing
