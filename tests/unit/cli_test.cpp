// The command-line contract of every binary: --help, --version, usage errors (exit 1).
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "common/build_info.h"
#include "common/subprocess.h"

namespace fabric {
namespace {

struct Binary {
  const char* name;
  const char* path;
  const char* subcommand; // one valid subcommand, for its --help
  const char* typo;       // that subcommand mistyped
  const char* operand;    // what that subcommand needs after it to parse, or nothing
};

// Names the parameter in test output instead of dumping its bytes.
void PrintTo(const Binary& binary, std::ostream* os) {
  *os << binary.name;
}

const Binary kBinaries[] = {
    {"fabric-probe", FABRIC_PROBE_BINARY, "devices", "devics", nullptr},
    {"fabric-pfc", FABRIC_PFC_BINARY, "show", "shwo", "lo"},
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

TEST_P(CliContract, MistypedSubcommandOrOptionNamesTheClosestOne) {
  auto r = run_subprocess({GetParam().path, GetParam().typo});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 1);
  EXPECT_NE(r->stderr_text.find(std::string("unknown subcommand '") + GetParam().typo +
                                "' (did you mean " + GetParam().subcommand + "?)"),
            std::string::npos)
      << r->stderr_text;

  r = run_subprocess({GetParam().path, "--verison"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 1);
  EXPECT_NE(r->stderr_text.find("unknown option '--verison' (did you mean --version?)"),
            std::string::npos)
      << r->stderr_text;

  r = run_subprocess({GetParam().path, "frobnicate"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 1);
  EXPECT_NE(r->stderr_text.find(std::string("commands: ") + GetParam().subcommand),
            std::string::npos)
      << r->stderr_text;
}

TEST_P(CliContract, HelpAsACommandPrintsTheHelp) {
  auto r = run_subprocess({GetParam().path, "help"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 0);
  auto help = run_subprocess({GetParam().path, "--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(r->stdout_text, help->stdout_text);

  r = run_subprocess({GetParam().path, "help", GetParam().subcommand});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 0);
  help = run_subprocess({GetParam().path, GetParam().subcommand, "--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(r->stdout_text, help->stdout_text);
}

// `--log-level` after the subcommand is the global option (a bad level is its error),
// not an argument the subcommand does not know.
TEST_P(CliContract, GlobalOptionsWorkAfterTheSubcommand) {
  std::vector<std::string> args = {GetParam().path, GetParam().subcommand};
  if (GetParam().operand != nullptr) args.push_back(GetParam().operand);
  args.insert(args.end(), {"--log-level", "loud"});
  auto r = run_subprocess(args);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 1);
  EXPECT_NE(r->stderr_text.find("loud"), std::string::npos) << r->stderr_text;
  EXPECT_EQ(r->stderr_text.find("not expected"), std::string::npos) << r->stderr_text;
}

INSTANTIATE_TEST_SUITE_P(Binaries, CliContract, ::testing::ValuesIn(kBinaries),
                         [](const ::testing::TestParamInfo<Binary>& param_info) {
                           std::string n = param_info.param.name;
                           for (char& c : n)
                             c = c == '-' ? '_' : c;
                           return n;
                         });

// A bad item is a usage error before any device is read: the device named does not even
// exist, and the answer is still about priority 9.
TEST(PfcCli, SetChecksItsArgumentsBeforeTouchingADevice) {
  auto r = run_subprocess({FABRIC_PFC_BINARY, "set", "fk-no-such-dev", "--prio-pfc", "9:on"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 1) << r->stderr_text;
  EXPECT_NE(r->stderr_text.find("--prio-pfc 9:on: priority 9 is out of range (0-7)"),
            std::string::npos)
      << r->stderr_text;
}

// The shipped profile names no device: the error says what to type or what to add.
TEST(PfcCli, PlanWithoutDevicesSaysWhereToNameThem) {
  const std::string profile = FABRIC_SOURCE_DIR "/deploy/pfc/roce-lossless.yaml";
  auto r = run_subprocess({FABRIC_PFC_BINARY, "plan", "-p", profile});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 1) << r->stderr_text;
  EXPECT_NE(r->stderr_text.find("fabric-pfc plan -p " + profile + " eth0"), std::string::npos)
      << r->stderr_text;
  EXPECT_NE(r->stderr_text.find("'devices: [eth0, eth1]'"), std::string::npos) << r->stderr_text;
}

// A configuration that cannot be loaded at start, a missing file included, exits 1 as the
// README says, naming the file.
TEST(ExporterCli, AMissingConfigurationIsAUsageError) {
  auto r = run_subprocess({FABRIC_EXPORTER_BINARY, "--config", "/nonexistent/exporter.yaml"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 1) << r->stderr_text;
  EXPECT_NE(r->stderr_text.find("/nonexistent/exporter.yaml"), std::string::npos) << r->stderr_text;
}

// Every option of every subcommand shows what its value is in one vocabulary (N, SIZE,
// DURATION, ...), never CLI11's type names (TEXT, INT, UINT) or a validator's range.
TEST(CliPlaceholders, FabricProbeSpeaksOneVocabulary) {
  const std::set<std::string> vocabulary = {
      "N",      "SIZE",   "DURATION", "GBPS", "PCT",   "PORT",    "FILE", "PATH",
      "DIR",    "LIST",   "JSON",     "MODE", "OP",    "MTU",     "X",    "FILE|LIST",
      "DEVICE", "NETDEV", "CIDR",     "ADDR", "INDEX", "MIN:MAX", "LEVEL", "PATTERN"};
  const std::regex option(R"(^\s+(?:-\w,)?--[\w-]+(?: (\S+))?)");
  for (const char* command : {"devices", "server", "tcp", "mesh", "bw", "lat", "lint", "topo"}) {
    auto r = run_subprocess({FABRIC_PROBE_BINARY, command, "--help"});
    ASSERT_TRUE(r.ok());
    std::istringstream lines(r->stdout_text);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, option) || !m[1].matched) continue;
      EXPECT_TRUE(vocabulary.count(m[1])) << command << ": " << line;
    }
  }
}

} // namespace
} // namespace fabric
