#include "cni/rollback.h"

#include <spdlog/spdlog.h>

namespace fabric::cni {

Rollback::~Rollback() {
  if (!steps_.empty()) run();
}

void Rollback::add(std::string what, std::function<Result<void>()> undo) {
  steps_.push_back({std::move(what), std::move(undo)});
}

std::vector<std::string> Rollback::run() {
  std::vector<std::string> failures;
  // Take the steps first: an undo that throws or re-enters must not run twice.
  auto steps = std::move(steps_);
  steps_.clear();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    auto undone = it->undo();
    if (undone.ok()) {
      spdlog::debug("rolled back: {}", it->what);
    } else {
      spdlog::error("could not roll back {}: {}", it->what, undone.error().message());
      failures.push_back(it->what + ": " + undone.error().message());
    }
  }
  return failures;
}

Error with_rollback_outcome(Error error, const std::vector<std::string>& failures) {
  if (failures.empty()) return error;
  std::string text = "rollback incomplete, left behind: ";
  for (std::size_t i = 0; i < failures.size(); ++i) {
    text += (i ? "; " : "") + failures[i];
  }
  if (!error.hint().empty()) text = error.hint() + "; " + text;
  return std::move(error).with_hint(text);
}

} // namespace fabric::cni
