// The built fabric-probe binary as the netns tests run it: agents in the background inside a
// namespace (`ip netns exec NS fabric-probe server --port 0 --port-file F`), waited for by
// their port file rather than by sleeping, and always killed at the end.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "tests/support/temp_dir.h"

namespace fabric::testing {

// A child process with stdout and stderr in files. The destructor sends SIGTERM, waits
// up to 5 s, then SIGKILLs: no test leaves one behind.
class BackgroundProcess {
public:
  BackgroundProcess(std::vector<std::string> argv, std::string stdout_path,
                    std::string stderr_path);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Whether it still runs (reaps it when it has exited).
  bool running();
  // Sends `signal` and waits up to `limit` for the exit; the exit status (128 + signal
  // when killed), or an error when it did not end in time.
  Result<int> stop(int signal, std::chrono::milliseconds limit);
  std::string stderr_text() const;
  std::string stdout_text() const;

private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::string stdout_path_, stderr_path_;
};

// Polls `condition` every 20 ms for at most `limit`.
bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds limit);

std::string read_text(const std::string& path);

// `fabric-probe server --port 0` inside namespace `ns`, ready once its port file exists.
class ProbeAgent {
public:
  // Waits up to `ready_within` for the port file.
  ProbeAgent(const std::string& ns, const TempDir& dir, const std::string& name,
             std::vector<std::string> extra_args = {},
             std::chrono::milliseconds ready_within = std::chrono::seconds(10));
  bool ready() const { return port_ != 0; }
  uint16_t port() const { return port_; }
  BackgroundProcess& process() { return process_; }
  std::string log() const { return process_.stderr_text(); }

private:
  std::string port_file_;
  BackgroundProcess process_;
  uint16_t port_ = 0;
};

} // namespace fabric::testing
