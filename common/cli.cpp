#include "common/cli.h"

#include <cstdio>

#include "common/build_info.h"
#include "common/log.h"
#include "common/strings.h"

namespace fabric::cli {
namespace {

int usage_error(const std::string& program, const std::string& message) {
  std::fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", program.c_str(), message.c_str(),
               program.c_str());
  return kExitUsage;
}

std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  std::string match = closest_match(word, candidates);
  return match.empty() ? "" : " (did you mean " + match + "?)";
}

// CLI11 answers a mistyped subcommand, `help` and a mistyped option before the subcommand
// all with "A subcommand is required". This reads the words before the subcommand first:
// `help [COMMAND]` prints the help, an unknown word or option is named with the closest
// valid one. Returns an exit status when the program should stop.
std::optional<int> check_command_word(CLI::App& app, const std::string& program, int argc,
                                      char** argv) {
  auto subcommands = app.get_subcommands([](const CLI::App*) { return true; });
  if (subcommands.empty()) return std::nullopt;
  auto find = [&subcommands](const std::string& word) -> CLI::App* {
    for (auto* sub : subcommands)
      if (sub->check_name(word)) return sub;
    return nullptr;
  };
  std::vector<std::string> names;
  for (const auto* sub : subcommands)
    names.push_back(sub->get_name());
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return std::nullopt;
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string name = arg.substr(0, arg.find('='));
      const CLI::Option* option = app.get_option_no_throw(name);
      if (option == nullptr && name != "-h" && name != "--help" && name != "--version") {
        std::vector<std::string> flags = {"--help", "--version"};
        for (const auto* o : app.get_options())
          for (const auto& lname : o->get_lnames())
            flags.push_back("--" + lname);
        return usage_error(program, "unknown option '" + name + "'" + suggestion(name, flags));
      }
      if (option != nullptr && name == arg && option->get_expected_min() > 0) ++i;
      continue;
    }
    if (arg == "help") {
      CLI::App* topic = i + 1 < argc ? find(argv[i + 1]) : nullptr;
      std::fputs((topic != nullptr ? topic->help(program) : app.help()).c_str(), stdout);
      return kExitOk;
    }
    if (find(arg) != nullptr) return std::nullopt;
    std::string hint = suggestion(arg, names);
    if (hint.empty()) hint = " (commands: " + join(names) + ")";
    return usage_error(program, "unknown subcommand '" + arg + "'" + hint);
  }
  return std::nullopt;
}

} // namespace

void add_common_options(CLI::App& app, const std::string& program, CommonOptions& options) {
  app.set_version_flag("--version", version_text(program));
  app.add_option("--log-level", options.log_level,
                 std::string("Log level on stderr: ") + log::kLevelNames +
                     " (default: $FABRIC_LOG_LEVEL, else warn)")
      ->type_name("LEVEL");
  // Subcommands added after this inherit it: --log-level (and --help, --version) also
  // work after the subcommand, as in git, ip or kubectl.
  app.fallthrough();
}

std::optional<int> parse(CLI::App& app, const std::string& program, CommonOptions& options,
                         int argc, char** argv) {
  if (auto status = check_command_word(app, program, argc, argv)) return status;
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
    return usage_error(program, e.what());
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
