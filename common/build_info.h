// What this binary is: version, git revision, and the optional features compiled in.
#pragma once

#include <string>

namespace fabric {

struct BuildInfo {
  const char* version;
  const char* git_revision;
  const char* build_type;
  bool with_verbs;
  bool with_nccl;
  bool with_mpi;
  bool sanitized;
};

const BuildInfo& build_info();

// "fabric-probe 0.1.0 (git 1a2b3c4d5e6f)\nfeatures: +verbs -nccl +mpi"
std::string version_text(const std::string& program);

} // namespace fabric
