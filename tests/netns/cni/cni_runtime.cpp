#include "tests/netns/cni/cni_runtime.h"

#include "common/json.h"
#include "common/subprocess.h"

#include <vector>

namespace fabric::testing {

Result<rapidjson::Document> CniReply::json() const {
  return json::parse(stdout_text, "fabric-cni stdout");
}

int CniReply::code() const {
  auto doc = json();
  if (!doc.ok() || !doc->IsObject()) return -1;
  const rapidjson::Value* code = find_member(*doc, "code");
  return code != nullptr && code->IsInt() ? code->GetInt() : -1;
}

std::string CniReply::msg() const {
  auto doc = json();
  if (!doc.ok() || !doc->IsObject()) return "";
  const rapidjson::Value* msg = find_member(*doc, "msg");
  return msg != nullptr && msg->IsString() ? msg->GetString() : "";
}

std::string CniReply::describe() const {
  return "exit " + std::to_string(exit_status) + "\nstdout: " + stdout_text +
         "\nstderr: " + stderr_text;
}

CniRuntime::CniRuntime(std::string host_netns, std::string binary)
    : host_netns_(std::move(host_netns)), binary_(std::move(binary)) {}

Result<CniReply> CniRuntime::run(const CniCall& call) const {
  // A runtime passes its own environment; a fixed minimal one keeps the test's variables
  // (and a developer's shell) out of the plugin's and its IPAM plugin's view.
  std::map<std::string, std::string> env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"},
                                            {"CNI_COMMAND", call.command}};
  auto set = [&](const char* name, const std::string& value) {
    if (!value.empty()) env[name] = value;
  };
  set("CNI_CONTAINERID", call.container_id);
  set("CNI_NETNS", call.netns);
  set("CNI_IFNAME", call.ifname);
  set("CNI_ARGS", call.args);
  set("CNI_PATH", call.path);

  SubprocessOptions options;
  options.environment = std::move(env);
  options.stdin_text = call.config;
  options.timeout = call.timeout;
  std::vector<std::string> argv = {"ip", "netns", "exec", host_netns_, binary_};
  if (!call.nic_stand_in.empty()) {
    // `ip netns exec` gives the command a mount namespace and a sysfs of the host
    // namespace: the bind mount is the plugin's alone, and gone when it exits. After ADD
    // has moved the NIC, DEL finds no such netdev on the host and sees sysfs as it is.
    argv = {"ip",
            "netns",
            "exec",
            host_netns_,
            "sh",
            "-c",
            "if [ -e \"/sys/class/net/$1\" ]; then mount --bind \"$2\" \"/sys/class/net/$1\" "
            "|| exit 97; fi; exec \"$3\"",
            "sh",
            call.nic_stand_in,
            call.nic_stand_in_sysfs,
            binary_};
  }
  FABRIC_ASSIGN_OR_RETURN(auto proc, run_subprocess(argv, options));
  CniReply reply;
  reply.exit_status = proc.exit_status;
  reply.stdout_text = std::move(proc.stdout_text);
  reply.stderr_text = std::move(proc.stderr_text);
  return reply;
}

const rapidjson::Value* find_member(const rapidjson::Value& object, const std::string& name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name.c_str());
  return it == object.MemberEnd() ? nullptr : &it->value;
}

} // namespace fabric::testing
