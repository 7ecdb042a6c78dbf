#include "common/cli.h"

#include <cstdio>

#include "common/build_info.h"
#include "common/log.h"

namespace fabric::cli {

void add_common_options(CLI::App& app, const std::string& program, CommonOptions& options) {
  app.set_version_flag("--version", version_text(program));
  app.add_option("--log-level", options.log_level,
                 std::string("Log level on stderr: ") + log::kLevelNames +
                     " (default: $FABRIC_LOG_LEVEL, else warn)");
}

std::optional<int> parse(CLI::App& app, const std::string& program, CommonOptions& options,
                         int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion&) {
    // CLI11 prints the version string with an extra newline; print it as it is.
    std::fputs(version_text(program).c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", program.c_str(), e.what(),
                 program.c_str());
    return kExitUsage;
  }
  if (auto logged = log::init(program, options.log_level); !logged.ok()) {
    log::report_error(program, logged.error());
    return kExitUsage;
  }
  return std::nullopt;
}

int fail(const std::string& program, const Error& error) {
  log::report_error(program, error);
  return exit_status_for(error.code());
}

} // namespace fabric::cli
