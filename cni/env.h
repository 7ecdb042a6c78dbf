// The CNI_* environment a runtime invokes the plugin with, read and validated in one place.
//
// Which variables a command needs follows the spec (SPEC.md, "CNI operations"):
//   ADD, CHECK  CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME
//   DEL         CNI_COMMAND, CNI_CONTAINERID, CNI_IFNAME (CNI_NETNS may be empty: the pod's
//               namespace can be gone already, and DEL must still clean up)
//   GC          CNI_COMMAND, CNI_PATH
//   STATUS      CNI_COMMAND
//   VERSION     CNI_COMMAND
// CNI_ARGS and CNI_PATH are optional elsewhere. As in libcni's skel, an empty variable
// counts as unset.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cni/command.h"
#include "common/result.h"

namespace fabric::cni {

inline constexpr const char* kEnvCommand = "CNI_COMMAND";
inline constexpr const char* kEnvContainerId = "CNI_CONTAINERID";
inline constexpr const char* kEnvNetns = "CNI_NETNS";
inline constexpr const char* kEnvIfname = "CNI_IFNAME";
inline constexpr const char* kEnvArgs = "CNI_ARGS";
inline constexpr const char* kEnvPath = "CNI_PATH";

struct CniEnv {
  Command command = Command::kVersion;
  std::string container_id, netns, ifname; // empty when the command does not need it
  std::vector<std::string> path;           // CNI_PATH split on ':'
  std::map<std::string, std::string> args; // CNI_ARGS parsed
  std::string args_text;                   // CNI_ARGS as received, for delegated plugins
};

// `lookup` returns the variable or nullopt. Missing or malformed variables are
// kInvalidEnvironment (CNI code 4) naming them; CNI_CONTAINERID and CNI_IFNAME are
// validated with names.h, CNI_NETNS must be an absolute path.
Result<CniEnv> read_env(const std::function<std::optional<std::string>(const char*)>& lookup);
// read_env over the process environment.
Result<CniEnv> read_process_env();

// CNI_ARGS: "K=V;K=V". Runtimes send more than we use (kubelet and Multus add
// IgnoreUnknown, K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID, K8S_POD_UID,
// and Multus MAC= and IP=), so every key is kept and none is refused. A key may appear
// twice (Multus appends IgnoreUnknown=true to a list that may already have it): the last
// one wins, as in libcni's LoadArgs. Empty segments (a trailing ';') are skipped. A segment
// without '=' or with an empty or non-alphanumeric key is an error naming CNI_ARGS; a value
// may contain '=' (it is split at the first one).
Result<std::map<std::string, std::string>> parse_cni_args(std::string_view text);

// CNI_PATH split on ':', empty entries dropped.
std::vector<std::string> split_cni_path(std::string_view text);

// The CNI_* variables describing this invocation (all but CNI_COMMAND), for passing the
// same request on to a delegated plugin: the inverse of read_env.
std::map<std::string, std::string> delegation_env(const CniEnv& env);

} // namespace fabric::cni
