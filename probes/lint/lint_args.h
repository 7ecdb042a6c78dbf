// `fabric-probe lint`'s flags as the user typed them, and their check into LintOptions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "probes/lint/lint.h"

namespace fabric::probes {

struct LintArgs {
  bool json = false;
  std::vector<std::string> devices;
  int dscp = kDefaultRoceDscp;
  std::string expect_netns_mode; // "", "shared" or "exclusive"
  std::string min_memlock;       // a size; "" = the default
  std::string root = "/";
  std::optional<int> gpu;
  std::string interface;
};

// Errors name the flag.
Result<LintOptions> make_lint_options(const LintArgs& args);

} // namespace fabric::probes
