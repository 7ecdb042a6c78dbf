// Drives the built fabric-cni binary the way a container runtime (libcni under Multus)
// does: CNI_* variables in the environment, the network configuration on stdin, one JSON
// document back on stdout and an exit status. The binary runs inside a chosen "host"
// network namespace (`ip netns exec HOST fabric-cni`), so a test never touches the real
// host's links.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include <rapidjson/document.h>

#include "common/result.h"

namespace fabric::testing {

// One invocation. Empty strings leave the variable unset, as a runtime does for the
// variables a command does not need.
struct CniCall {
  std::string command; // ADD, DEL, CHECK, STATUS, GC, VERSION
  std::string container_id;
  std::string netns; // CNI_NETNS: the pod's namespace path
  std::string ifname;
  std::string args; // CNI_ARGS
  std::string path = "/usr/lib/cni";
  std::string config; // stdin
  // A veth standing in for a hardware NIC: when `nic_stand_in` is on the host at the
  // start of the call, the plugin (and only it: a mount namespace of its own) sees the
  // folder `nic_stand_in_sysfs` as that netdev's sysfs directory. The folder holds the
  // `device` link every physical NIC or VF has and a veth lacks; the netns tier cannot
  // make a PCI device. Empty: the real sysfs.
  std::string nic_stand_in;
  std::string nic_stand_in_sysfs;
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

struct CniReply {
  int exit_status = -1;
  std::string stdout_text;
  std::string stderr_text;

  bool ok() const { return exit_status == 0; }
  // stdout parsed as one JSON document (the whole text; trailing bytes are an error).
  Result<rapidjson::Document> json() const;
  // An error reply's "code" and "msg"; -1 and "" when stdout is not an error object.
  int code() const;
  std::string msg() const;
  // Everything a failing assertion should show.
  std::string describe() const;
};

class CniRuntime {
public:
  // `host_netns` is a name under /var/run/netns.
  explicit CniRuntime(std::string host_netns, std::string binary = FABRIC_CNI_BINARY);

  // Runs the plugin once. Errors are for failing to run it at all (or its timeout); a
  // plugin that ran and failed is a CniReply with its status and error object.
  Result<CniReply> run(const CniCall& call) const;

private:
  std::string host_netns_;
  std::string binary_;
};

// The member `name` of a JSON object; nullptr when absent or when `object` is not one.
const rapidjson::Value* find_member(const rapidjson::Value& object, const std::string& name);

} // namespace fabric::testing
