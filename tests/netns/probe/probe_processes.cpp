#include "tests/netns/probe/probe_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h> // environ: declared with _GNU_SOURCE, which g++ defines

#include <fstream>
#include <sstream>
#include <thread>

namespace fabric::testing {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

BackgroundProcess::BackgroundProcess(std::vector<std::string> argv, std::string stdout_path,
                                     std::string stderr_path)
    : stdout_path_(std::move(stdout_path)), stderr_path_(std::move(stderr_path)) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(a.data());
  args.push_back(nullptr);
  if (posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
}

BackgroundProcess::~BackgroundProcess() {
  if (running() && !stop(SIGTERM, 5s).ok()) (void)stop(SIGKILL, 5s);
}

bool BackgroundProcess::running() {
  if (pid_ <= 0 || status_ >= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return r == 0;
}

Result<int> BackgroundProcess::stop(int signal, std::chrono::milliseconds limit) {
  if (running()) ::kill(pid_, signal);
  if (!wait_for([&] { return !running(); }, limit)) {
    return Error(ErrorCode::kTimeout, "stopping pid " + std::to_string(pid_),
                 "still running after the signal");
  }
  return status_;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string BackgroundProcess::stderr_text() const {
  return read_text(stderr_path_);
}

std::string BackgroundProcess::stdout_text() const {
  return read_text(stdout_path_);
}

bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return condition();
}

ProbeAgent::ProbeAgent(const std::string& ns, const TempDir& dir, const std::string& name,
                       std::vector<std::string> extra_args, std::chrono::milliseconds ready_within)
    : port_file_(dir.file(name + ".port")),
      process_(
          [&] {
            std::vector<std::string> argv = {"ip",
                                             "netns",
                                             "exec",
                                             ns,
                                             FABRIC_PROBE_BINARY,
                                             "server",
                                             "--port",
                                             "0",
                                             "--port-file",
                                             dir.file(name + ".port")};
            argv.insert(argv.end(), extra_args.begin(), extra_args.end());
            return argv;
          }(),
          dir.file(name + ".out"), dir.file(name + ".err")) {
  if (!process_.started()) return;
  // The port file appears once the agent listens (written atomically: whole or absent).
  bool listening =
      wait_for([&] { return !read_text(port_file_).empty() || !process_.running(); }, ready_within);
  std::string text = read_text(port_file_);
  if (listening && !text.empty()) port_ = static_cast<uint16_t>(std::stoul(text));
}

} // namespace fabric::testing
