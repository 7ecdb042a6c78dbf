#include "cni/env.h"

#include <cctype>
#include <cstdlib>

#include "cni/names.h"

namespace fabric::cni {
namespace {

struct Requirement {
  const char* name;
  bool add, del, check, status, gc;
};

// The spec's table of required variables per command (VERSION needs only CNI_COMMAND).
constexpr Requirement kRequirements[] = {
    {kEnvContainerId, true, true, true, false, false},
    {kEnvNetns, true, false, true, false, false},
    {kEnvIfname, true, true, true, false, false},
    {kEnvPath, false, false, false, false, true},
};

bool required_for(const Requirement& r, Command command) {
  switch (command) {
  case Command::kAdd: return r.add;
  case Command::kDel: return r.del;
  case Command::kCheck: return r.check;
  case Command::kStatus: return r.status;
  case Command::kGc: return r.gc;
  case Command::kVersion: return false;
  }
  return false;
}

// The variables a command reads at all; the others are ignored even when set, so that a
// stale CNI_IFNAME cannot fail a GC.
bool used_by(const char* name, Command command) {
  std::string_view n(name);
  switch (command) {
  case Command::kAdd:
  case Command::kDel:
  case Command::kCheck: return true;
  case Command::kStatus:
  case Command::kGc: return n == kEnvPath;
  case Command::kVersion: return false;
  }
  return false;
}

std::string required_list(Command command) {
  std::string out = kEnvCommand;
  for (const auto& r : kRequirements) {
    if (required_for(r, command)) out += std::string(", ") + r.name;
  }
  return out;
}

bool is_arg_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
}

} // namespace

Result<std::map<std::string, std::string>> parse_cni_args(std::string_view text) {
  std::map<std::string, std::string> args;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(';', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view pair = text.substr(start, end - start);
    start = end + 1;
    if (pair.empty()) continue;
    std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      return Error(ErrorCode::kInvalidEnvironment, kEnvArgs,
                   "'" + std::string(pair) + "' is not a KEY=VALUE pair");
    }
    std::string_view key = pair.substr(0, eq);
    if (key.empty()) {
      return Error(ErrorCode::kInvalidEnvironment, kEnvArgs,
                   "'" + std::string(pair) + "' has an empty key");
    }
    for (char c : key) {
      if (!is_arg_key_char(c)) {
        return Error(ErrorCode::kInvalidEnvironment, kEnvArgs,
                     "key '" + std::string(key) +
                         "' may only contain letters, digits, '_', '-' and '.'");
      }
    }
    args[std::string(key)] = std::string(pair.substr(eq + 1));
  }
  return args;
}

std::vector<std::string> split_cni_path(std::string_view text) {
  std::vector<std::string> dirs;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(':', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) dirs.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return dirs;
}

Result<CniEnv> read_env(const std::function<std::optional<std::string>(const char*)>& lookup) {
  auto get = [&](const char* name) -> std::string {
    std::optional<std::string> v = lookup(name);
    return v ? *v : std::string();
  };

  std::string command_text = get(kEnvCommand);
  if (command_text.empty()) {
    return Error(ErrorCode::kInvalidEnvironment, kEnvCommand,
                 "is not set (expected ADD, DEL, CHECK, STATUS, GC or VERSION)")
        .with_hint("fabric-cni is a CNI plugin: a container runtime or Multus runs it");
  }
  std::optional<Command> command = parse_command(command_text);
  if (!command) {
    return Error(ErrorCode::kInvalidEnvironment, kEnvCommand,
                 "unknown command '" + command_text +
                     "' (expected ADD, DEL, CHECK, STATUS, GC or VERSION)");
  }

  CniEnv env;
  env.command = *command;

  std::string missing;
  for (const auto& r : kRequirements) {
    if (required_for(r, env.command) && get(r.name).empty()) {
      missing += missing.empty() ? "" : ", ";
      missing += r.name;
    }
  }
  if (!missing.empty()) {
    return Error(ErrorCode::kInvalidEnvironment, missing,
                 "not set; " + std::string(command_name(env.command)) + " requires " +
                     required_list(env.command));
  }

  if (used_by(kEnvContainerId, env.command)) {
    env.container_id = get(kEnvContainerId);
    FABRIC_TRY(validate_container_id(env.container_id, kEnvContainerId));
  }
  if (used_by(kEnvIfname, env.command)) {
    env.ifname = get(kEnvIfname);
    FABRIC_TRY(validate_interface_name(env.ifname, kEnvIfname));
  }
  if (used_by(kEnvNetns, env.command)) {
    env.netns = get(kEnvNetns);
    // Opened, never composed into another path; a relative one would depend on our cwd.
    if (!env.netns.empty() && env.netns.front() != '/') {
      return Error(ErrorCode::kInvalidEnvironment, kEnvNetns,
                   "'" + env.netns + "' is not an absolute path to a network namespace");
    }
  }
  if (used_by(kEnvArgs, env.command)) {
    env.args_text = get(kEnvArgs);
    FABRIC_ASSIGN_OR_RETURN(env.args, parse_cni_args(env.args_text));
  }
  if (used_by(kEnvPath, env.command)) env.path = split_cni_path(get(kEnvPath));
  return env;
}

Result<CniEnv> read_process_env() {
  return read_env([](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

std::map<std::string, std::string> delegation_env(const CniEnv& env) {
  std::map<std::string, std::string> out;
  if (!env.container_id.empty()) out[kEnvContainerId] = env.container_id;
  if (!env.netns.empty()) out[kEnvNetns] = env.netns;
  if (!env.ifname.empty()) out[kEnvIfname] = env.ifname;
  if (!env.args_text.empty()) out[kEnvArgs] = env.args_text;
  std::string path;
  for (const auto& dir : env.path) {
    path += path.empty() ? "" : ":";
    path += dir;
  }
  if (!path.empty()) out[kEnvPath] = path;
  return out;
}

} // namespace fabric::cni
