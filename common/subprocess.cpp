#include "common/subprocess.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h> // environ: declared with _GNU_SOURCE, which g++ defines

#include "common/fd.h"

namespace fabric {
namespace {

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

Result<Pipe> make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Error::from_errno(errno, "pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Writes to the child's stdin with SIGPIPE blocked on this thread, so that a child that
// exits without reading everything makes write() fail with EPIPE instead of killing us.
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  ssize_t written = write(fd, data, size);
  int saved_errno = errno;
  if (written < 0 && saved_errno == EPIPE) {
    const timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero); // consume the pending SIGPIPE
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved_errno;
  return written;
}

int wait_status_to_exit(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

} // namespace

Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv,
                                        const SubprocessOptions& options) {
  if (argv.empty()) return Error(ErrorCode::kInternal, "run_subprocess", "empty argv");
  FABRIC_ASSIGN_OR_RETURN(Pipe in, make_pipe());
  FABRIC_ASSIGN_OR_RETURN(Pipe out, make_pipe());
  FABRIC_ASSIGN_OR_RETURN(Pipe err, make_pipe());

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read_end.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end.get(), STDERR_FILENO);

  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_storage;
  std::vector<char*> env;
  if (options.environment) {
    for (const auto& [k, v] : *options.environment)
      env_storage.push_back(k + "=" + v);
    for (auto& e : env_storage)
      env.push_back(e.data());
    env.push_back(nullptr);
  }

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(),
                        options.environment ? env.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error::from_errno(rc, "starting " + argv[0]);

  // Our copies of the child's ends must close, or we never see EOF on its output.
  in.read_end.reset();
  out.write_end.reset();
  err.write_end.reset();

  SubprocessResult result;
  std::size_t stdin_written = 0;
  if (options.stdin_text.empty())
    in.write_end.reset();
  else
    fcntl(in.write_end.get(), F_SETFL, O_NONBLOCK);

  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  bool timed_out = false;
  while (out.read_end || err.read_end) {
    pollfd fds[3];
    nfds_t n = 0;
    auto add = [&](UniqueFd& fd, short events) {
      if (fd) fds[n++] = pollfd{fd.get(), events, 0};
    };
    add(out.read_end, POLLIN);
    add(err.read_end, POLLIN);
    add(in.write_end, POLLOUT);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int ready = poll(fds, n, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) {
      int e = errno;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return Error::from_errno(e, "poll");
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in.write_end.get()) {
        ssize_t w = write_without_sigpipe(fds[i].fd, options.stdin_text.data() + stdin_written,
                                          options.stdin_text.size() - stdin_written);
        if (w > 0) stdin_written += static_cast<std::size_t>(w);
        // EPIPE: the child stopped reading; what it says next is still collected.
        if (w < 0 && errno != EAGAIN && errno != EINTR) in.write_end.reset();
        if (stdin_written == options.stdin_text.size()) in.write_end.reset();
        continue;
      }
      UniqueFd& fd = fds[i].fd == out.read_end.get() ? out.read_end : err.read_end;
      std::string& sink = &fd == &out.read_end ? result.stdout_text : result.stderr_text;
      char buf[8192];
      ssize_t got = read(fd.get(), buf, sizeof buf);
      if (got > 0)
        sink.append(buf, static_cast<std::size_t>(got));
      else if (got == 0 || (errno != EINTR && errno != EAGAIN))
        fd.reset();
    }
  }

  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Error::from_errno(errno, "waitpid");
  }
  if (timed_out) {
    return Error(ErrorCode::kTimeout, argv[0],
                 "did not finish within " + std::to_string(options.timeout.count()) + " ms");
  }
  result.exit_status = wait_status_to_exit(status);
  return result;
}

} // namespace fabric
