// Runs another program and captures what it says: IPAM plugins, `ip`, `ibv_devinfo`.
// The child gets a bounded time; past it, it is killed (SIGKILL) and the run is a timeout.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace fabric {

struct SubprocessOptions {
  std::string stdin_text;
  // Replaces the whole environment when set; otherwise the child inherits ours.
  std::optional<std::map<std::string, std::string>> environment;
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

struct SubprocessResult {
  int exit_status = -1; // the exit code, or 128 + signal number if it was killed
  std::string stdout_text;
  std::string stderr_text;
};

// Runs argv[0] (looked up in PATH when it has no slash). A program that ran and exited
// non-zero is a successful Result: the caller decides what its status means. Errors are
// for failing to start it, or for the timeout.
Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv,
                                        const SubprocessOptions& options = {});

} // namespace fabric
