// Replays the NCCL profile fuzzer's seed corpus through the function its libFuzzer target
// runs, so that every build (gcc included) checks the parser's invariants on those files.
#include <filesystem>

#include <gtest/gtest.h>

#include "test_support.h"
#include "tests/fuzz/nccl_profile_exercise.h"

namespace fabric::nccl_profiler {
namespace {

namespace fs = std::filesystem;

TEST(NcclProfileFuzzCorpus, EverySeedKeepsTheInvariants) {
  int files = 0, accepted = 0;
  for (const auto& entry :
       fs::directory_iterator(fs::path(FABRIC_TEST_DATA_DIR) / "nccl_profiler" / "corpus")) {
    bool ok = false;
    auto violation = exercise_profile_parser(testing::read_text(entry.path()), &ok);
    EXPECT_FALSE(violation.has_value())
        << entry.path().filename() << ": " << violation.value_or("");
    ++files;
    accepted += ok;
  }
  EXPECT_GE(files, 10);
  // Seeds on both sides of the parser's checks, or the fuzzer starts from nothing useful.
  EXPECT_GE(accepted, 5);
  EXPECT_GE(files - accepted, 5);
}

} // namespace
} // namespace fabric::nccl_profiler
