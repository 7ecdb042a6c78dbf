// IPAM delegation: runs the plugin named by ipam.type (host-local, static, whereabouts,
// dhcp, ...) the way libcni's invoke package does: found on CNI_PATH, executed with the
// network configuration on stdin and the CNI_* variables in its environment (the rest of
// our environment passed through), its stdout read as a result or an error object.
//
// Version negotiation. A plugin refuses a cniVersion it does not list (code 1): Debian's
// plugins (1.1.1) stop at 1.0.0 while our configuration may say 1.1.0. On that refusal
// we ask the plugin's VERSION and delegate again with the highest version both support
// that is not newer than the configuration's, rewriting only cniVersion in the delegated
// stdin (and prevResult's shape, when the two versions' result formats differ). 1.0.0 and
// 1.1.0 results have the same format, so nothing is lost. GC and STATUS exist only from
// 1.1.0: for them the plugin's VERSION is asked first, and a plugin without 1.1.0 is
// kUnsupported so the caller can fall back (GC: an IPAM DEL per stale attachment).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "cni/command.h"
#include "cni/config.h"
#include "cni/env.h"
#include "cni/result.h"
#include "common/result.h"

namespace fabric::cni {

struct IpamInvocation {
  std::string type;                         // plugin name, looked up on `path`
  std::vector<std::string> path;            // CNI_PATH entries
  std::string stdin_text;                   // the network config, unchanged
  std::map<std::string, std::string> env;   // the CNI_* variables to pass (CNI_COMMAND is set here)
  std::chrono::milliseconds timeout{30000}; // for each execution of the plugin
};

// The invocation for `conf` and `env`: ipam.type, CNI_PATH, the raw stdin and
// delegation_env(env). Requires conf.ipam_type.
IpamInvocation make_ipam_invocation(const NetConf& conf, const CniEnv& env);

// What a delegated plugin said when it failed, so the caller can pass its CNI code on
// unchanged (render_error's code_override). code is 0 when the failure was not an error
// object from the plugin (not found, timeout, garbage output).
struct DelegatedFailure {
  int code = 0;
  std::string msg, details;
};

// ADD: the plugin's result (IPAM results carry ips, routes and dns). An error object from
// the plugin becomes an Error with its msg (and details as hint) and a code mapped by
// error_code_for_cni(); `failure`, when given, receives the plugin's own code and text.
// A plugin that succeeds with output that is not a usable result gets its DEL before the
// error returns, so that the address it allocated is not leaked.
Result<CniResult> ipam_add(const IpamInvocation& invocation, DelegatedFailure* failure = nullptr);
// DEL, CHECK, GC or STATUS: success or the plugin's error, as for ipam_add.
Result<void> ipam_run(const IpamInvocation& invocation, Command command,
                      DelegatedFailure* failure = nullptr);

// The executable `type` in the first directory of `path` that has it. kNotFound lists the
// directories searched; an empty path is kInvalidEnvironment naming CNI_PATH.
Result<std::string> find_plugin(const std::string& type, const std::vector<std::string>& path);
// The plugin's supportedVersions, from its VERSION reply.
Result<std::vector<std::string>> plugin_versions(const IpamInvocation& invocation,
                                                 std::string_view cni_version);

} // namespace fabric::cni
