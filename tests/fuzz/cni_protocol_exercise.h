// One input through every parser of the CNI protocol layer, checking what must hold for
// any input: no crash (the sanitizers watch that), results that survive a render/parse
// round trip in every version, error documents that are valid JSON with the mapped code,
// environments that survive delegation_env(). Shared by the libFuzzer target and the unit
// test that replays the seed corpus.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fabric::cni {

struct ExerciseReport {
  std::optional<std::string> violation; // the first broken invariant
  int configs_accepted = 0;             // parse_netconf successes (any command but VERSION)
  int results_accepted = 0;
  int envs_accepted = 0;
};

// The input is read as a network configuration (for each command), as a result, as an
// error object, as CNI_ARGS, and as an environment: lines "NAME=VALUE".
ExerciseReport exercise_cni_protocol(std::string_view input);

} // namespace fabric::cni
