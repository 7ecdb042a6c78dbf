#include "cni/plugin.h"

#include <spdlog/spdlog.h>

#include "cni/commands.h"
#include "cni/config.h"
#include "cni/result.h"
#include "cni/version.h"
#include "common/json.h"

namespace fabric::cni {
namespace {

// The version to write an error in before the configuration is validated: the config's
// own cniVersion when it can be read at all, else the newest (render_error's fallback).
std::string version_hint(std::string_view stdin_text) {
  auto doc = json::parse(stdin_text, "network configuration");
  if (!doc.ok() || !doc->IsObject()) return {};
  auto version = json::get_optional_string(*doc, "", "cniVersion");
  return version.ok() && *version ? **version : std::string();
}

PluginOutput failure(const Error& error, std::string_view version,
                     std::optional<int> cni_code = std::nullopt) {
  spdlog::error("{}", error.message());
  if (!error.hint().empty()) spdlog::error("hint: {}", error.hint());
  int status = exit_status_for(error.code());
  return {render_error(error, version, cni_code), status == 0 ? 1 : status};
}

} // namespace

PluginOutput environment_error(const Error& error, std::string_view stdin_text) {
  return failure(error, version_hint(stdin_text));
}

PluginOutput run_plugin(const CniEnv& env, std::string_view stdin_text,
                        const PluginContext& context) {
  if (env.command == Command::kVersion) return {render_version_reply(kLatestVersion), 0};

  auto conf = parse_netconf(stdin_text, env.command);
  if (!conf.ok()) return failure(conf.error(), version_hint(stdin_text));

  Invocation inv{env, *conf, context, std::nullopt};
  spdlog::debug("{} container={} ifname={} netns={} network={}", command_name(env.command),
                env.container_id, env.ifname, env.netns, conf->name);
  Result<std::string> output = Error(ErrorCode::kInternal, "run_plugin", "no command ran");
  switch (env.command) {
  case Command::kAdd: output = cmd_add(inv); break;
  case Command::kDel: output = cmd_del(inv); break;
  case Command::kCheck: output = cmd_check(inv); break;
  case Command::kStatus: output = cmd_status(inv); break;
  case Command::kGc: output = cmd_gc(inv); break;
  case Command::kVersion: break; // answered above
  }
  if (!output.ok()) return failure(output.error(), conf->cni_version, inv.cni_code);
  return {std::move(*output), 0};
}

} // namespace fabric::cni
