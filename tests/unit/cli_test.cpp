// The command-line contract of every binary: --help, --version, usage errors (exit 1).
#include <gtest/gtest.h>

#include "common/build_info.h"
#include "common/subprocess.h"

namespace fabric {
namespace {

struct Binary {
  const char* name;
  const char* path;
  const char* subcommand; // one valid subcommand, for its --help
};

// Names the parameter in test output instead of dumping its bytes.
void PrintTo(const Binary& binary, std::ostream* os) {
  *os << binary.name;
}

const Binary kBinaries[] = {
    {"fabric-probe", FABRIC_PROBE_BINARY, "devices"},
    {"fabric-pfc", FABRIC_PFC_BINARY, "show"},
};

class CliContract : public ::testing::TestWithParam<Binary> {};

TEST_P(CliContract, HelpGoesToStdoutAndExitsZero) {
  auto r = run_subprocess({GetParam().path, "--help"});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_status, 0);
  EXPECT_NE(r->stdout_text.find("Usage"), std::string::npos) << r->stdout_text;
  EXPECT_NE(r->stdout_text.find("--version"), std::string::npos);
  auto sub = run_subprocess({GetParam().path, GetParam().subcommand, "--help"});
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->exit_status, 0);
  EXPECT_NE(sub->stdout_text.find("--json"), std::string::npos) << sub->stdout_text;
}

TEST_P(CliContract, VersionNamesProgramRevisionAndFeatures) {
  auto r = run_subprocess({GetParam().path, "--version"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 0);
  EXPECT_EQ(r->stdout_text, version_text(GetParam().name));
  EXPECT_NE(r->stdout_text.find(build_info().version), std::string::npos);
  EXPECT_NE(r->stdout_text.find("features:"), std::string::npos);
}

TEST_P(CliContract, BadArgumentsAreAUsageErrorOnStderr) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--no-such-flag"}, std::vector<std::string>{},
        std::vector<std::string>{"no-such-command"},
        std::vector<std::string>{"--log-level", "loud", GetParam().subcommand}}) {
    args.insert(args.begin(), GetParam().path);
    auto r = run_subprocess(args);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_status, 1) << args.back();
    EXPECT_TRUE(r->stdout_text.empty()) << r->stdout_text;
    EXPECT_NE(r->stderr_text.find(GetParam().name), std::string::npos) << r->stderr_text;
  }
}

INSTANTIATE_TEST_SUITE_P(Binaries, CliContract, ::testing::ValuesIn(kBinaries),
                         [](const ::testing::TestParamInfo<Binary>& param_info) {
                           std::string n = param_info.param.name;
                           for (char& c : n)
                             c = c == '-' ? '_' : c;
                           return n;
                         });

} // namespace
} // namespace fabric
