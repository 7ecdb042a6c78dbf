#include "exporters/nccl_profiler/plugin_config.h"

#include <fcntl.h>
#include <string_view>
#include <unistd.h>

#include "common/fd.h"
#include "exporters/nccl_profiler/numbers.h"
#include "exporters/nccl_profiler/proc_stat.h"

namespace fabric::nccl_profiler {

PluginConfig config_from_environment(const char* dir, const char* flush_seconds,
                                     const char* events) {
  PluginConfig config;
  if (events != nullptr) {
    std::string_view value(events);
    if (value == "timed") {
      config.events = EventSet::kTimed;
    } else if (value == "counted") {
      config.events = EventSet::kCounted;
    } else {
      config.warnings.push_back(std::string(kEventsEnv) + "='" + std::string(value) +
                                "' is neither 'timed' nor 'counted'; using timed");
    }
  }
  if (dir != nullptr) {
    std::string_view value(dir);
    if (value.empty() || value.front() != '/') {
      config.warnings.push_back(std::string(kDirEnv) + "='" + std::string(value) +
                                "' is not an absolute path; using " + kDefaultDir);
    } else {
      config.dir = value;
    }
  }
  if (flush_seconds != nullptr) {
    std::string_view value(flush_seconds);
    auto seconds = parse_number<int>(value);
    if (!seconds || *seconds < 1 || *seconds > kMaxFlushSeconds) {
      config.warnings.push_back(std::string(kFlushEnv) + "='" + std::string(value) +
                                "' is not a number of seconds from 1 to " +
                                std::to_string(kMaxFlushSeconds) + "; using " +
                                std::to_string(kDefaultFlushSeconds));
    } else {
      config.flush_interval = std::chrono::seconds(*seconds);
    }
  }
  return config;
}

ProcessIdentity own_process_identity() {
  ProcessIdentity identity;
  identity.pid = ::getpid();
  char buffer[1024];
  UniqueFd stat(::open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
  if (stat) {
    ssize_t n = ::read(stat.get(), buffer, sizeof buffer - 1);
    if (n > 0) {
      identity.start_ticks =
          parse_stat_start_ticks(std::string_view(buffer, static_cast<std::size_t>(n))).value_or(0);
    }
  }
  ssize_t n = ::readlink("/proc/self/ns/pid", buffer, sizeof buffer - 1);
  if (n > 0) {
    identity.pid_ns =
        parse_pid_ns_link(std::string_view(buffer, static_cast<std::size_t>(n))).value_or(0);
  }
  return identity;
}

} // namespace fabric::nccl_profiler
