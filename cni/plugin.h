// fabric-cni's commands: one entry point that takes what the runtime gave us (the CNI_*
// environment and stdin) and returns what goes to stdout and the exit status.
//
// The CNI contract for the caller (kubelet -> Multus -> libcni -> us): stdout carries
// exactly one JSON document (ADD's result, VERSION's reply, or an error object) or, for a
// successful DEL/CHECK/STATUS/GC, nothing; logs go to stderr and the configured logFile.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "cni/env.h"
#include "common/result.h"
#include "common/sysfs.h"

namespace fabric::cni {

struct PluginContext {
  SysfsReader sysfs{"/sys"};
  // How long an invocation waits for another one on the same parent before answering
  // "try again later" (code 11). The runtime retries; a pod is never failed for it.
  std::chrono::milliseconds lock_timeout{std::chrono::seconds(60)};
};

struct PluginOutput {
  std::string stdout_text;
  int exit_status = 0;
};

// Runs the command of `env` (already read and validated: see read_env) on `stdin_text`.
PluginOutput run_plugin(const CniEnv& env, std::string_view stdin_text,
                        const PluginContext& context);

// The output for an environment that could not be read: an error object in the newest
// version (the configuration's version may be unknown yet), exit status 1.
PluginOutput environment_error(const Error& error, std::string_view stdin_text);

} // namespace fabric::cni
