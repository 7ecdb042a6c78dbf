// fabric-cni: the CNI plugin binary. A runtime (libcni, through Multus) runs it with the
// CNI_* environment and the network configuration on stdin; it answers on stdout with
// exactly one JSON document and its exit status. Logs go to stderr and, when the
// configuration names one, to logFile.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cni/config.h"
#include "cni/env.h"
#include "cni/plugin.h"
#include "common/build_info.h"
#include "common/fd.h"
#include "common/json.h"
#include "common/log.h"

namespace {

// logFile as a descriptor opened without blocking: a FIFO nobody reads (or any file that
// is not a regular one) is refused instead of hanging the runtime's ADD.
class LogFileSink : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit LogFileSink(fabric::UniqueFd fd) : fd_(std::move(fd)) {}

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    // One write per line, O_APPEND: lines of concurrent invocations do not interleave.
    [[maybe_unused]] ssize_t n = ::write(fd_.get(), line.data(), line.size());
  }
  void flush_() override {}

private:
  fabric::UniqueFd fd_;
};

fabric::Result<fabric::UniqueFd> open_log_file(const std::string& path) {
  fabric::UniqueFd fd(::open(
      path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600));
  if (!fd && errno == ENXIO) {
    // What a non-blocking open for writing says of a FIFO that nobody reads.
    return fabric::Error(fabric::ErrorCode::kInvalidConfig, "logFile " + path,
                         "not a regular file (a FIFO nobody reads would block the plugin)");
  }
  if (!fd) return fabric::Error::from_errno(errno, "open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fabric::Error::from_errno(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) {
    return fabric::Error(fabric::ErrorCode::kInvalidConfig, "logFile " + path,
                         "not a regular file (a FIFO or device could block the plugin)");
  }
  return fd;
}

// stdin up to one byte past the limit: enough to know it is too large, without reading
// (or holding) the rest.
std::string read_stdin_bounded() {
  std::string text;
  char buffer[65536];
  while (text.size() <= fabric::cni::kMaxNetConfBytes) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, stdin);
    if (n == 0) break;
    text.append(buffer, n);
  }
  return text;
}

// stderr shows warnings and errors (the runtime copies it into its own log); logFile,
// when configured, gets everything at logLevel. Bad logging settings never fail the
// command: they are reported on stderr and ignored.
void configure_logging(std::string_view stdin_text) {
  auto stderr_sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  stderr_sink->set_level(spdlog::level::warn);
  auto logger = std::make_shared<spdlog::logger>("fabric-cni", stderr_sink);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l fabric-cni[%P]: %v");
  logger->set_level(spdlog::level::warn);
  spdlog::set_default_logger(logger);

  if (stdin_text.size() > fabric::cni::kMaxNetConfBytes) return; // refused by parse_netconf
  auto doc = fabric::json::parse(stdin_text, "network configuration");
  if (!doc.ok() || !doc->IsObject()) return;
  auto file = fabric::json::get_optional_string(*doc, "", "logFile");
  auto level_name = fabric::json::get_optional_string(*doc, "", "logLevel");
  auto level = spdlog::level::info;
  if (level_name.ok() && *level_name) {
    auto parsed = fabric::log::parse_level(**level_name);
    if (parsed.ok()) level = *parsed;
  }
  if (file.ok() && *file && !(*file)->empty()) {
    // Checked before anything is written: parse_netconf refuses such a configuration
    // too, but only after the file would have been created.
    if (auto valid = fabric::cni::check_absolute_path(**file, "logFile"); !valid.ok()) {
      logger->warn("{}; not logging to it", valid.error().message());
      return;
    }
    auto opened = open_log_file(**file);
    if (!opened.ok()) {
      logger->warn("{}; not logging to it", opened.error().message());
      return;
    }
    try {
      auto file_sink = std::make_shared<LogFileSink>(std::move(*opened));
      file_sink->set_level(level);
      logger->sinks().push_back(file_sink);
      // set_pattern applies to the sinks present: again, now that the file is one of them.
      logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l fabric-cni[%P]: %v");
      logger->set_level(std::min(level, spdlog::level::warn));
      logger->flush_on(spdlog::level::trace);
    } catch (const spdlog::spdlog_ex& e) {
      logger->warn("logFile {}: {}", **file, e.what());
    }
  } else if (level_name.ok() && *level_name && level < spdlog::level::warn) {
    // No file: an explicit logLevel below warn makes stderr more verbose instead.
    stderr_sink->set_level(level);
    logger->set_level(level);
  }
}

} // namespace

int main(int argc, char** argv) {
  // A person at a shell gets a pointer to the runtime contract, not a hang on stdin.
  if (argc > 1) {
    std::string arg = argv[1];
    if (arg == "--version") {
      std::fputs(fabric::version_text("fabric-cni").c_str(), stdout);
      return 0;
    }
    std::fputs("fabric-cni is a CNI plugin: a container runtime runs it with CNI_COMMAND and "
               "the other CNI_* variables set and the network configuration on stdin.\n"
               "Usage: CNI_COMMAND=VERSION fabric-cni </dev/null\n"
               "See cni/README.md for the configuration keys.\n",
               arg == "--help" || arg == "-h" ? stdout : stderr);
    return arg == "--help" || arg == "-h" ? 0 : 1;
  }

  const std::string stdin_text = read_stdin_bounded();
  configure_logging(stdin_text);

  fabric::cni::PluginOutput out;
  auto env = fabric::cni::read_process_env();
  if (!env.ok()) {
    out = fabric::cni::environment_error(env.error(), stdin_text);
  } else {
    out = fabric::cni::run_plugin(*env, stdin_text, fabric::cni::PluginContext{});
  }
  std::fputs(out.stdout_text.c_str(), stdout);
  std::fflush(stdout);
  spdlog::shutdown();
  return out.exit_status;
}
