// Network namespaces: running code inside one without disturbing the caller.
//
// setns(CLONE_NEWNET) changes the namespace of the calling thread only. Doing it on the
// caller's thread would leave that thread (often main, or a pooled thread) in the pod's
// namespace if anything failed before switching back. So the function runs on a fresh
// thread that enters the namespace and simply ends; the caller never moves.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "common/fd.h"
#include "common/result.h"

namespace fabric::netns {

// Opens a namespace file (/var/run/netns/NAME, /proc/PID/ns/net) and checks that it is one.
Result<UniqueFd> open(const std::string& path);

// Checks that `fd` is an open namespace file before it reaches the kernel, whose answer
// for a bad one (EBADF, or EINVAL for any other file) would not say which argument was
// wrong. `what` names the argument in the error ("target network namespace fd 7").
Result<void> check_fd(int fd, const std::string& what);

// The calling thread's current network namespace.
Result<UniqueFd> open_current();

// Whether two namespace fds refer to the same namespace (same nsfs inode).
Result<bool> same(int fd_a, int fd_b);

// Enters the namespace `fd` on the calling thread. Prefer run_in().
Result<void> enter(int fd);

// Runs `fn` inside the namespace at `path` on a dedicated thread and returns its result.
// Errors opening or entering the namespace come back as the Result, with the path.
template <typename Fn> auto run_in(const std::string& path, Fn&& fn) -> std::invoke_result_t<Fn> {
  using R = std::invoke_result_t<Fn>;
  auto ns = open(path);
  if (!ns.ok()) return std::move(ns).error();
  // A placeholder that is always overwritten: the thread below stores its outcome here.
  R outcome = Error(ErrorCode::kInternal, "netns::run_in", "function did not run");
  std::thread worker([&] {
    if (auto entered = enter(ns->get()); !entered.ok()) {
      outcome = std::move(entered).error().with_context("entering network namespace " + path);
      return;
    }
    outcome = fn();
  });
  worker.join();
  return outcome;
}

} // namespace fabric::netns
