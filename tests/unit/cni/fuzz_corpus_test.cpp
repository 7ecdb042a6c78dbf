// Replays the fuzzer's seed corpus through the same function the libFuzzer target runs,
// so every build (gcc included) checks the protocol invariants on realistic inputs.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/fuzz/cni_protocol_exercise.h"

namespace fabric::cni {
namespace {

namespace fs = std::filesystem;

TEST(CniFuzzCorpus, EverySeedKeepsTheInvariants) {
  fs::path corpus = fs::path(FABRIC_TEST_DATA_DIR) / "cni" / "corpus";
  ExerciseReport total;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    ExerciseReport report = exercise_cni_protocol(ss.str());
    EXPECT_FALSE(report.violation.has_value())
        << entry.path().filename() << ": " << report.violation.value_or("");
    total.configs_accepted += report.configs_accepted;
    total.results_accepted += report.results_accepted;
    total.envs_accepted += report.envs_accepted;
    ++files;
  }
  EXPECT_GE(files, 20);
  // The corpus reaches past the first error in each parser, or it seeds nothing useful.
  EXPECT_GT(total.configs_accepted, 5);
  EXPECT_GE(total.results_accepted, 5);
  EXPECT_GE(total.envs_accepted, 3);
}

TEST(CniFuzzCorpus, CountsWhatEachParserAccepts) {
  // An environment whose CNI_PATH survives delegation unchanged...
  auto ok = exercise_cni_protocol("CNI_COMMAND=GC\nCNI_PATH=/opt/cni/bin::/usr/lib/cni\n");
  EXPECT_FALSE(ok.violation.has_value()) << ok.violation.value_or("");
  EXPECT_EQ(ok.envs_accepted, 1);
  // ...and inputs no parser accepts are counted as such.
  auto none = exercise_cni_protocol("\xff\xfe");
  EXPECT_EQ(none.configs_accepted + none.results_accepted + none.envs_accepted, 0);
}

} // namespace
} // namespace fabric::cni
