#include "cni/ipam.h"

#include <algorithm>

#include <sys/stat.h>
#include <unistd.h> // environ: declared with _GNU_SOURCE, which g++ defines

#include <spdlog/spdlog.h>

#include "cni/version.h"
#include "common/json.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace fabric::cni {
namespace {

constexpr std::size_t kMaxQuotedOutput = 512;

std::string plugin_label(const IpamInvocation& inv, Command command) {
  return "IPAM plugin " + inv.type + " " + std::string(command_name(command));
}

// Our environment minus the request's own CNI_* variables, then the invocation's.
std::map<std::string, std::string> child_environment(const IpamInvocation& inv, Command command) {
  static constexpr std::string_view kRequestVars[] = {kEnvCommand, kEnvContainerId, kEnvNetns,
                                                      kEnvIfname,  kEnvArgs,        kEnvPath};
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = kv.substr(0, eq);
    bool request_var = false;
    for (auto v : kRequestVars)
      request_var = request_var || v == key;
    if (!request_var) env.emplace(std::string(key), std::string(kv.substr(eq + 1)));
  }
  for (const auto& [k, v] : inv.env)
    env[k] = v;
  env[kEnvCommand] = std::string(command_name(command));
  return env;
}

std::string quoted_tail(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  if (text.size() > kMaxQuotedOutput) text = "..." + text.substr(text.size() - kMaxQuotedOutput);
  return text;
}

Result<SubprocessResult> exec_plugin(const std::string& binary, const IpamInvocation& inv,
                                     Command command, const std::string& stdin_text) {
  SubprocessOptions options;
  options.stdin_text = stdin_text;
  options.environment = child_environment(inv, command);
  options.timeout = inv.timeout;
  return run_subprocess({binary}, options).context(plugin_label(inv, command));
}

// A failed run as an Error: the plugin's error object when it printed one, otherwise what
// little we know (exit status, the end of stderr and stdout).
Error plugin_failure(const IpamInvocation& inv, Command command, const SubprocessResult& proc,
                     DelegatedFailure* failure) {
  auto parsed = parse_error(proc.stdout_text);
  if (parsed.ok()) {
    if (failure != nullptr) *failure = DelegatedFailure{parsed->code, parsed->msg, parsed->details};
    Error e(error_code_for_cni(parsed->code), plugin_label(inv, command),
            parsed->msg + " (CNI error code " + std::to_string(parsed->code) + ")");
    if (!parsed->details.empty()) e.with_hint(parsed->details);
    return e;
  }
  std::string detail = "exited with status " + std::to_string(proc.exit_status) +
                       " without a CNI error object on stdout";
  if (!proc.stdout_text.empty()) detail += "; stdout: " + quoted_tail(proc.stdout_text);
  if (!proc.stderr_text.empty()) detail += "; stderr: " + quoted_tail(proc.stderr_text);
  return Error(ErrorCode::kSystem, plugin_label(inv, command), detail);
}

Result<std::string> config_version_of(std::string_view stdin_text) {
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document doc,
                          json::parse(stdin_text, "network configuration for IPAM"));
  FABRIC_ASSIGN_OR_RETURN(auto version, json::get_optional_string(doc, "", "cniVersion"));
  return version.value_or(std::string(kImpliedVersion));
}

// The configuration with another cniVersion. prevResult is re-rendered in the new version
// whenever it changes: the formats differ (0.x ips carry "version", 1.x do not; 1.1.0 adds
// fields), and libcni's plugins refuse a prevResult whose own cniVersion is not one their
// result type supports, even between 1.1.0 and 1.0.0 whose ips look alike.
Result<std::string> with_cni_version(std::string_view stdin_text, std::string_view from,
                                     std::string_view to) {
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document doc,
                          json::parse(stdin_text, "network configuration for IPAM"));
  if (!doc.IsObject()) {
    return Error(ErrorCode::kDecode, "network configuration for IPAM", "must be a JSON object");
  }
  auto& alloc = doc.GetAllocator();
  rapidjson::Value version(to.data(), static_cast<rapidjson::SizeType>(to.size()), alloc);
  // HasMember/operator[] rather than FindMember: comparing rapidjson's mutable member
  // iterators is ambiguous under C++20's rewritten operators.
  if (doc.HasMember("cniVersion")) {
    doc["cniVersion"] = version;
  } else {
    doc.AddMember("cniVersion", version, alloc);
  }
  if (doc.HasMember("prevResult") && doc["prevResult"].IsObject() && from != to) {
    rapidjson::Value& prev = doc["prevResult"];
    FABRIC_ASSIGN_OR_RETURN(CniResult parsed,
                            parse_result(json::to_string(prev)).context("prevResult"));
    FABRIC_ASSIGN_OR_RETURN(rapidjson::Document rendered,
                            json::parse(render_result(parsed, to), "prevResult"));
    prev.CopyFrom(rendered, alloc);
  }
  return json::to_string(doc);
}

Result<std::vector<std::string>> versions_from(const std::string& binary, const IpamInvocation& inv,
                                               std::string_view cni_version) {
  std::string request = "{\"cniVersion\":\"" + std::string(cni_version) + "\"}";
  FABRIC_ASSIGN_OR_RETURN(SubprocessResult proc,
                          exec_plugin(binary, inv, Command::kVersion, request));
  if (proc.exit_status != 0) return plugin_failure(inv, Command::kVersion, proc, nullptr);
  std::string label = plugin_label(inv, Command::kVersion);
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document doc,
                          json::parse(proc.stdout_text, "reply").context(label));
  if (!doc.IsObject() || !doc.HasMember("supportedVersions") ||
      !doc["supportedVersions"].IsArray()) {
    return Error(ErrorCode::kDecode, label,
                 "reply has no supportedVersions list: " + quoted_tail(proc.stdout_text));
  }
  std::vector<std::string> versions;
  for (const auto& v : doc["supportedVersions"].GetArray()) {
    if (v.IsString()) versions.emplace_back(v.GetString(), v.GetStringLength());
  }
  return versions;
}

// The highest version both sides speak that is not newer than the configuration's.
Result<std::string> negotiate(const std::string& binary, const IpamInvocation& inv,
                              const std::string& config_version) {
  FABRIC_ASSIGN_OR_RETURN(auto theirs, versions_from(binary, inv, config_version));
  std::string best;
  for (const auto& v : theirs) {
    if (!is_supported(v) || compare_versions(v, config_version) > 0) continue;
    if (best.empty() || compare_versions(v, best) > 0) best = v;
  }
  if (best.empty()) {
    return Error(ErrorCode::kIncompatibleVersion, "IPAM plugin " + inv.type,
                 "supports CNI " + join(theirs) + ", none of which fabric-cni speaks at or below " +
                     config_version);
  }
  return best;
}

// Runs `command`, negotiating the version when the plugin refuses ours; the successful run.
Result<SubprocessResult> delegate(const IpamInvocation& inv, Command command,
                                  DelegatedFailure* failure) {
  FABRIC_ASSIGN_OR_RETURN(std::string binary, find_plugin(inv.type, inv.path));
  FABRIC_ASSIGN_OR_RETURN(std::string config_version, config_version_of(inv.stdin_text));

  if (command == Command::kGc || command == Command::kStatus) {
    std::string_view first = first_version_with(command);
    if (compare_versions(config_version, first) < 0) {
      return Error(ErrorCode::kUnsupported, plugin_label(inv, command),
                   "needs cniVersion " + std::string(first) + " or later; the configuration is " +
                       config_version);
    }
    FABRIC_ASSIGN_OR_RETURN(auto theirs, versions_from(binary, inv, config_version));
    if (std::find(theirs.begin(), theirs.end(), config_version) == theirs.end()) {
      return Error(ErrorCode::kUnsupported, plugin_label(inv, command),
                   "the plugin supports CNI " + join(theirs) + " but not " + config_version +
                       ", which " + std::string(command_name(command)) + " needs");
    }
  }

  FABRIC_ASSIGN_OR_RETURN(SubprocessResult proc, exec_plugin(binary, inv, command, inv.stdin_text));
  if (proc.exit_status == 0) return proc;

  auto refused = parse_error(proc.stdout_text);
  if (refused.ok() && refused->code == 1 && command != Command::kGc &&
      command != Command::kStatus) {
    FABRIC_ASSIGN_OR_RETURN(std::string version, negotiate(binary, inv, config_version));
    if (version != config_version) {
      spdlog::debug("IPAM plugin {} does not support CNI {}; delegating {} with cniVersion {}",
                    inv.type, config_version, command_name(command), version);
      FABRIC_ASSIGN_OR_RETURN(std::string text,
                              with_cni_version(inv.stdin_text, config_version, version));
      FABRIC_ASSIGN_OR_RETURN(proc, exec_plugin(binary, inv, command, text));
      if (proc.exit_status == 0) return proc;
    }
  }
  return plugin_failure(inv, command, proc, failure);
}

} // namespace

IpamInvocation make_ipam_invocation(const NetConf& conf, const CniEnv& env) {
  IpamInvocation inv;
  inv.type = conf.ipam_type.value_or("");
  inv.path = env.path;
  inv.stdin_text = conf.raw;
  inv.env = delegation_env(env);
  return inv;
}

Result<std::string> find_plugin(const std::string& type, const std::vector<std::string>& path) {
  if (!is_plugin_name(type)) {
    return Error(ErrorCode::kInvalidConfig, "ipam.type",
                 "'" + type + "' must be a plugin file name, not a path");
  }
  if (path.empty()) {
    return Error(ErrorCode::kInvalidEnvironment, kEnvPath,
                 "is empty; it is needed to find IPAM plugin '" + type + "'");
  }
  for (const auto& dir : path) {
    std::string candidate = dir + (dir.back() == '/' ? "" : "/") + type;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return Error(ErrorCode::kNotFound, "IPAM plugin '" + type + "'",
               "not found in CNI_PATH (searched " + join(path) + ")")
      .with_hint("install the plugin into one of those directories or fix ipam.type");
}

Result<std::vector<std::string>> plugin_versions(const IpamInvocation& invocation,
                                                 std::string_view cni_version) {
  FABRIC_ASSIGN_OR_RETURN(std::string binary, find_plugin(invocation.type, invocation.path));
  return versions_from(binary, invocation, cni_version);
}

Result<CniResult> ipam_add(const IpamInvocation& invocation, DelegatedFailure* failure) {
  FABRIC_ASSIGN_OR_RETURN(SubprocessResult proc, delegate(invocation, Command::kAdd, failure));
  auto result = parse_result(proc.stdout_text);
  if (result.ok()) return result;
  // The plugin succeeded, so it holds an address we cannot use: give it back, or it is
  // leaked (no record will ever name it).
  Error error = std::move(result).error().with_context(plugin_label(invocation, Command::kAdd) +
                                                       " printed an unusable result");
  auto released = delegate(invocation, Command::kDel, nullptr);
  if (!released.ok()) {
    return std::move(error).with_hint("releasing its allocation failed too: " +
                                      released.error().message());
  }
  return error;
}

Result<void> ipam_run(const IpamInvocation& invocation, Command command,
                      DelegatedFailure* failure) {
  if (command == Command::kAdd || command == Command::kVersion) {
    return Error(ErrorCode::kInternal, "ipam_run",
                 std::string(command_name(command)) + " has its own entry point");
  }
  FABRIC_TRY(delegate(invocation, command, failure));
  return Ok();
}

} // namespace fabric::cni
