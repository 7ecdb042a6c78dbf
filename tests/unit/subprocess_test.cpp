#include <gtest/gtest.h>

#include "common/subprocess.h"

namespace fabric {
namespace {

using namespace std::chrono_literals;

TEST(Subprocess, CapturesStdoutStderrAndExitStatus) {
  auto r = run_subprocess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->stdout_text, "out\n");
  EXPECT_EQ(r->stderr_text, "err\n");
  EXPECT_EQ(r->exit_status, 3);
}

TEST(Subprocess, FeedsStdin) {
  SubprocessOptions options;
  options.stdin_text = "{\"cniVersion\": \"1.0.0\"}";
  auto r = run_subprocess({"cat"}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, options.stdin_text);
}

TEST(Subprocess, LargeOutputOnBothStreamsDoesNotDeadlock) {
  SubprocessOptions options;
  options.stdin_text.assign(1 << 20, 'x'); // larger than a pipe buffer
  auto r = run_subprocess({"sh", "-c", "tee /dev/stderr"}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text.size(), 1u << 20);
  EXPECT_EQ(r->stderr_text.size(), 1u << 20);
}

TEST(Subprocess, AChildThatIgnoresStdinDoesNotKillUs) {
  SubprocessOptions options;
  options.stdin_text.assign(1 << 20, 'x');
  auto r = run_subprocess({"true"}, options);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->exit_status, 0);
}

TEST(Subprocess, EnvironmentCanBeReplaced) {
  SubprocessOptions options;
  options.environment =
      std::map<std::string, std::string>{{"CNI_COMMAND", "ADD"}, {"PATH", "/usr/bin:/bin"}};
  auto r = run_subprocess({"sh", "-c", "echo $CNI_COMMAND; echo ${HOME:-unset}"}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "ADD\nunset\n");
}

TEST(Subprocess, TimeoutKillsTheChild) {
  SubprocessOptions options;
  options.timeout = 200ms;
  auto start = std::chrono::steady_clock::now();
  auto r = run_subprocess({"sleep", "30"}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kTimeout);
  // Not a timing assertion on our speed: it proves the child was killed, not waited for.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

TEST(Subprocess, MissingProgramIsNotFound) {
  auto r = run_subprocess({"fabric-no-such-program"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("fabric-no-such-program"), std::string::npos);
}

TEST(Subprocess, KilledBySignalReports128PlusSignal) {
  auto r = run_subprocess({"sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 128 + 15);
}

} // namespace
} // namespace fabric
