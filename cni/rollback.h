// Undo steps for a multi-step operation: each step that changes something registers how
// to take it back; on failure they run newest first, and whatever could not be undone is
// reported by name so nothing is left behind silently.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace fabric::cni {

class Rollback {
public:
  Rollback() = default;
  Rollback(const Rollback&) = delete;
  Rollback& operator=(const Rollback&) = delete;
  // A forgotten commit() or run() still undoes: a path that returns early cannot leak.
  ~Rollback();

  // `what` names the change ("macvlan net1 in the pod", "IPAM allocation").
  void add(std::string what, std::function<Result<void>()> undo);
  // The operation succeeded: keep every change.
  void commit() { steps_.clear(); }
  // Undoes every change, newest first. Returns a description of each undo that failed
  // ("IPAM allocation: ..."), empty when everything was taken back.
  std::vector<std::string> run();

private:
  struct Step {
    std::string what;
    std::function<Result<void>()> undo;
  };
  std::vector<Step> steps_;
};

// Attaches the outcome of a rollback to the error that caused it: the error keeps its
// code; the hint lists what could not be undone, so an operator knows what to clean.
Error with_rollback_outcome(Error error, const std::vector<std::string>& failures);

} // namespace fabric::cni
