#include "tests/fuzz/cni_protocol_exercise.h"

#include "cni/config.h"
#include "cni/env.h"
#include "cni/names.h"
#include "cni/result.h"
#include "cni/version.h"
#include "common/json.h"

namespace fabric::cni {
namespace {

// The value of the last "NAME=" line, as a runtime's environment would hold it.
std::optional<std::string> env_line(std::string_view input, std::string_view name) {
  std::optional<std::string> found;
  std::size_t start = 0;
  while (start < input.size()) {
    std::size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    std::string_view line = input.substr(start, end - start);
    if (line.size() > name.size() && line.substr(0, name.size()) == name &&
        line[name.size()] == '=') {
      found = std::string(line.substr(name.size() + 1));
    }
    start = end + 1;
  }
  return found;
}

std::optional<std::string> check_error_document(const Error& error, std::string_view version) {
  std::string text = render_error(error, version);
  auto doc = json::parse(text, "error document");
  if (!doc.ok()) return "render_error wrote invalid JSON: " + doc.error().message();
  auto code = json::get_optional_int(*doc, "", "code");
  if (!code.ok() || !*code || **code != cni_code_for(error.code())) {
    return "render_error wrote the wrong code for " + error.message();
  }
  auto written = json::get_optional_string(*doc, "", "cniVersion");
  if (!written.ok() || !*written || !is_supported(**written)) {
    return "render_error wrote an unsupported cniVersion";
  }
  return std::nullopt;
}

std::optional<std::string> check_config(std::string_view input, ExerciseReport& report) {
  for (Command command : kAllCommands) {
    auto conf = parse_netconf(input, command);
    if (!conf.ok()) {
      if (command == Command::kVersion) return "parse_netconf refused a VERSION request";
      if (auto v = check_error_document(conf.error(), "1.0.0")) return v;
      continue;
    }
    if (command == Command::kVersion) continue;
    ++report.configs_accepted;
    if (!is_supported(conf->cni_version)) return "accepted unsupported " + conf->cni_version;
    if (!check_command_allowed(command, conf->cni_version).ok()) {
      return "accepted " + std::string(command_name(command)) + " under " + conf->cni_version;
    }
    if (conf->type != kPluginType) return "accepted type " + conf->type;
    if (!validate_network_name(conf->name, "name").ok()) return "accepted name " + conf->name;
    if (conf->mtu && (*conf->mtu < kMinMtu || *conf->mtu > kMaxMtu)) return "accepted bad mtu";
    if (command == Command::kCheck && !conf->prev_result) return "CHECK without prevResult";
    // parse_netconf refuses every MAC that effective_mac would refuse without CNI_ARGS.
    CniEnv env;
    env.command = command;
    auto mac = effective_mac(*conf, env);
    if (!mac.ok()) return "effective_mac refused an accepted config: " + mac.error().message();
    if (conf->prev_result) (void)parse_result(*conf->prev_result);
  }
  return std::nullopt;
}

std::optional<std::string> check_result(std::string_view input, ExerciseReport& report) {
  auto result = parse_result(input);
  if (!result.ok()) return check_error_document(result.error(), "");
  ++report.results_accepted;
  for (const auto& version : supported_versions()) {
    std::string rendered = render_result(*result, version);
    auto again = parse_result(rendered);
    if (!again.ok()) {
      return "render_result(" + version + ") is not parseable: " + again.error().message();
    }
    if (again->cni_version != version) return "render_result lost cniVersion " + version;
    if (again->ips.size() != result->ips.size() ||
        again->interfaces.size() != result->interfaces.size() ||
        again->routes.size() != result->routes.size() || !(again->dns == result->dns)) {
      return "render_result(" + version + ") dropped entries";
    }
    for (std::size_t i = 0; i < result->ips.size(); ++i) {
      if (!(again->ips[i] == result->ips[i])) return "ips changed in " + version;
    }
    for (std::size_t i = 0; i < result->routes.size(); ++i) {
      if (again->routes[i].dst != result->routes[i].dst ||
          again->routes[i].gw != result->routes[i].gw) {
        return "routes changed in " + version;
      }
    }
    if (result_has_1_1_fields(version)) {
      if (!(again->interfaces == result->interfaces)) return "interfaces changed in " + version;
      if (!(again->routes == result->routes)) return "1.1.0 route fields changed";
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_env(std::string_view input, ExerciseReport& report) {
  auto env = read_env([&](const char* name) { return env_line(input, name); });
  if (!env.ok()) return check_error_document(env.error(), "1.1.0");
  ++report.envs_accepted;
  if (env->command == Command::kAdd) {
    if (!validate_container_id(env->container_id, "id").ok()) return "accepted a bad container id";
    if (!validate_interface_name(env->ifname, "ifname").ok()) return "accepted a bad ifname";
    if (env->netns.empty() || env->netns.front() != '/') return "accepted a bad netns";
  }
  // What we hand a delegated plugin must read back as the same request.
  auto vars = delegation_env(*env);
  vars[kEnvCommand] = std::string(command_name(env->command));
  auto again = read_env([&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
  if (!again.ok()) return "delegation_env is not readable: " + again.error().message();
  if (again->container_id != env->container_id || again->netns != env->netns ||
      again->ifname != env->ifname || again->path != env->path || again->args != env->args) {
    return "delegation_env changed the request";
  }
  return std::nullopt;
}

int sign(int v) {
  return (v > 0) - (v < 0);
}

} // namespace

ExerciseReport exercise_cni_protocol(std::string_view input) {
  ExerciseReport report;
  auto record = [&](std::optional<std::string> violation) {
    if (violation && !report.violation) report.violation = std::move(violation);
  };
  record(check_config(input, report));
  record(check_result(input, report));
  record(check_env(input, report));
  (void)parse_error(input);
  (void)parse_cni_args(input);
  std::string_view head = input.substr(0, input.find('\n'));
  if (sign(compare_versions(head, "1.0.0")) != -sign(compare_versions("1.0.0", head))) {
    record("compare_versions is not antisymmetric for '" + std::string(head) + "'");
  }
  return report;
}

} // namespace fabric::cni
