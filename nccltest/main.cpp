// fabric-nccltest: collective bus bandwidth on NCCL (GPUs) or MPI (host memory), in
// nccl-tests' output format. This file parses the command line and the environment; the
// run itself is nccltest/run.cpp.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "common/cli.h"
#include "common/log.h"
#include "nccltest/mpi_runtime.h"
#include "nccltest/run.h"
#include "nccltest/session.h"

namespace {

using namespace fabric;
using namespace fabric::nccltest;

// Under a launcher every rank parses the same command line: only rank 0 says what is
// wrong with it (or prints --help), instead of n copies of the same message.
class SilenceUnlessRankZero {
public:
  explicit SilenceUnlessRankZero(bool silence) {
    if (!silence) return;
    std::fflush(stdout);
    std::fflush(stderr);
    saved_out_ = ::dup(STDOUT_FILENO);
    saved_err_ = ::dup(STDERR_FILENO);
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      ::close(null);
    }
  }
  ~SilenceUnlessRankZero() {
    std::fflush(stdout);
    std::fflush(stderr);
    if (saved_out_ >= 0) ::dup2(saved_out_, STDOUT_FILENO), ::close(saved_out_);
    if (saved_err_ >= 0) ::dup2(saved_err_, STDERR_FILENO), ::close(saved_err_);
  }

private:
  int saved_out_ = -1, saved_err_ = -1;
};

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabric-nccltest: collective bus bandwidth on NCCL (GPUs) or MPI (host memory), "
               "in nccl-tests' output format; finds the slow node",
               kProgram};
  cli::CommonOptions common;
  cli::add_common_options(app, kProgram, common);
  RawOptions raw;
  raw.program = argc > 0 ? argv[0] : "";
  add_options(app, raw);

  const GetEnv env = process_env();
  const bool quiet = rank_hint(env) != 0;
  {
    SilenceUnlessRankZero silence(quiet);
    if (auto status = cli::parse(app, kProgram, common, argc, argv)) return *status;
  }
  std::vector<std::string> args(argv, argv + argc);
  auto options = validate_options(raw, args);
  if (!options.ok()) {
    if (!quiet) return cli::fail(kProgram, options.error());
    return exit_status_for(options.error().code());
  }
  if (!quiet) {
    if (auto writable = check_output_paths(*options); !writable.ok()) {
      return cli::fail(kProgram, writable.error());
    }
  }
  auto launch = detect_launch(env, mpi::built());
  if (!launch.ok()) {
    if (!quiet) return cli::fail(kProgram, launch.error());
    return exit_status_for(launch.error().code());
  }
  const char* fault_text = std::getenv(kFaultEnv);
  auto fault = parse_fault_plan(fault_text ? fault_text : "");
  if (!fault.ok()) {
    if (!quiet) return cli::fail(kProgram, fault.error());
    return exit_status_for(fault.error().code());
  }
  return run_nccltest(std::move(*options), std::move(*launch), std::move(*fault), &argc, &argv);
}
