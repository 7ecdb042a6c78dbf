// libFuzzer target for the file every training pod of a node can write into the NCCL
// profiler's directory, as fabric-exporter parses it (exporters/nccl_profiler/
// profile_format.h). Anything but a clean error or a consistent profile is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/nccl_profile_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto broken = fabric::nccl_profiler::exercise_profile_parser(input)) {
    std::fprintf(stderr, "nccl_profile_fuzz: %s\n", broken->c_str());
    std::abort();
  }
  return 0;
}
