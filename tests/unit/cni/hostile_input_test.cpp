// The built fabric-cni against inputs a tenant or a broken runtime could hand it: a logFile
// that is a FIFO nobody reads, and a configuration larger than any real one.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "cni/config.h"
#include "common/subprocess.h"
#include "tests/support/temp_dir.h"

namespace fabric::cni {
namespace {

using namespace std::chrono_literals;

class CniHostileInput : public ::testing::Test {
protected:
  fabric::testing::TempDir dir_;
};

TEST_F(CniHostileInput, ALogFileThatIsAFifoDoesNotHangThePlugin) {
  const std::string fifo = dir_.file("log");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  SubprocessOptions options;
  options.environment = std::map<std::string, std::string>{{"CNI_COMMAND", "VERSION"}};
  options.stdin_text = R"({"cniVersion": "1.1.0", "name": "n", "type": "fabric-cni", )"
                       R"("master": "eth1", "logFile": ")" +
                       fifo + R"("})";
  options.timeout = 20s; // opening the FIFO for writing used to block for ever
  auto run = run_subprocess({FABRIC_CNI_BINARY}, options);
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(run->exit_status, 0) << run->stderr_text;
  EXPECT_NE(run->stdout_text.find("\"supportedVersions\""), std::string::npos);
  EXPECT_NE(run->stderr_text.find("not a regular file"), std::string::npos) << run->stderr_text;
}

TEST_F(CniHostileInput, StdinOverOneMebibyteIsACniErrorAndNothingIsWritten) {
  SubprocessOptions options;
  options.environment = std::map<std::string, std::string>{{"CNI_COMMAND", "ADD"},
                                                           {"CNI_CONTAINERID", "c1"},
                                                           {"CNI_NETNS", "/proc/self/ns/net"},
                                                           {"CNI_IFNAME", "net1"},
                                                           {"CNI_PATH", "/nonexistent"}};
  const std::string state = dir_.file("state");
  options.stdin_text = R"({"cniVersion": "1.1.0", "name": "n", "type": "fabric-cni", )"
                       R"("master": "eth1", "stateDir": ")" +
                       state + R"(", "padding": ")" + std::string(kMaxNetConfBytes, 'x') + "\"}";
  auto run = run_subprocess({FABRIC_CNI_BINARY}, options);
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_NE(run->exit_status, 0);
  EXPECT_NE(run->stdout_text.find("\"code\": 7"), std::string::npos) << run->stdout_text;
  EXPECT_NE(run->stdout_text.find("more than 1048576 bytes on stdin"), std::string::npos)
      << run->stdout_text;
  EXPECT_FALSE(std::filesystem::exists(state));
}

} // namespace
} // namespace fabric::cni
