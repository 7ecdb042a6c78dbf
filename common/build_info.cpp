#include "common/build_info.h"

namespace fabric {

std::string version_text(const std::string& program) {
  const BuildInfo& info = build_info();
  auto flag = [](bool on, const char* name) { return std::string(on ? "+" : "-") + name; };
  std::string text = program + " " + info.version + " (git " + info.git_revision + ", " +
                     info.build_type + ")\nfeatures: " + flag(info.with_verbs, "verbs") + " " +
                     flag(info.with_nccl, "nccl") + " " + flag(info.with_mpi, "mpi");
  if (info.sanitized) text += " +asan+ubsan";
  return text + "\n";
}

} // namespace fabric
