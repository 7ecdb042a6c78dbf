// libFuzzer target for the CNI protocol layer (built with -DFABRIC_FUZZ=ON under clang):
//   cni_config_fuzz -max_total_time=60 CORPUS_DIR tests/data/cni/corpus
// A broken invariant aborts with its description, so libFuzzer saves the input.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/cni_protocol_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto report = fabric::cni::exercise_cni_protocol(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (report.violation) {
    std::fprintf(stderr, "invariant broken: %s\n", report.violation->c_str());
    std::abort();
  }
  return 0;
}
