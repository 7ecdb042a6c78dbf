#include "exporters/textfile_collector.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "common/fd.h"
#include "exporters/textfile_parser.h"

namespace fabric::exporters {
namespace {

constexpr const char* kReasons[] = {"malformed", "stale",      "too_large",
                                    "conflict",  "unreadable", "too_many"};

struct Seen {
  prometheus::MetricType type;
  std::set<std::string> series;
};

std::string series_key(const prometheus::ClientMetric& m) {
  auto labels = m.label;
  std::sort(labels.begin(), labels.end());
  std::string key;
  for (const auto& l : labels)
    key += l.name + '\0' + l.value + '\0';
  return key;
}

// The content of a regular file of at most `max` bytes; nullopt with `reason` set otherwise.
std::optional<std::string> read_bounded(int dir, const std::string& name, uint64_t max,
                                        struct stat& st, std::string& reason, std::string& detail) {
  // O_NONBLOCK: opening a FIFO someone left there must not hang the collector.
  UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    reason = "unreadable";
    detail = std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    reason = "unreadable";
    detail = "not a regular file";
    return std::nullopt;
  }
  if (static_cast<uint64_t>(st.st_size) > max) {
    reason = "too_large";
    detail = std::to_string(st.st_size) + " bytes, more than " + std::to_string(max);
    return std::nullopt;
  }
  std::string text(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      reason = "unreadable";
      detail = std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max) {
    reason = "too_large";
    detail = "grew past " + std::to_string(max) + " bytes while read";
    return std::nullopt;
  }
  text.resize(got);
  return text;
}

} // namespace

Result<void> TextfileCollector::collect(MetricSink& sink) {
  DIR* dir = ::opendir(options_.directory.c_str());
  if (dir == nullptr)
    return Error::from_errno(errno, "opening textfile directory", options_.directory);
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    // Writers rename a temporary file into place; dotfiles and other suffixes are theirs.
    if (name.size() > 5 && name.ends_with(".prom") && name.front() != '.') names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  std::map<std::string, double> skipped;
  for (const char* reason : kReasons)
    skipped[reason] = 0;
  if (names.size() > options_.max_files) {
    skipped["too_many"] = static_cast<double>(names.size() - options_.max_files);
    sink.error(std::to_string(names.size() - options_.max_files) + " textfiles over max_files " +
               std::to_string(options_.max_files) + " left out");
    names.resize(options_.max_files);
  }

  const double now = static_cast<double>(std::time(nullptr));
  std::vector<prometheus::MetricFamily> served;
  std::map<std::string, std::size_t> family_index;
  std::map<std::string, Seen> seen;
  std::vector<std::pair<std::string, double>> mtimes;
  for (const auto& name : names) {
    struct stat st {};
    std::string reason, detail;
    auto text = read_bounded(::dirfd(dir), name, options_.max_file_size, st, reason, detail);
    const std::string path = options_.directory + "/" + name;
    if (text) {
      const double mtime = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9;
      if (now - mtime > static_cast<double>(options_.max_age.count())) {
        reason = "stale";
      } else {
        auto families = parse_exposition(*text);
        if (!families.ok()) {
          reason = "malformed";
          detail = families.error().message();
        } else {
          std::size_t series = 0;
          for (const auto& f : *families) {
            series += f.metric.size();
            auto it = seen.find(f.name);
            if (it != seen.end() && it->second.type != f.type) {
              reason = "conflict";
              detail = f.name + " has another type in an earlier file";
            }
            for (const auto& m : f.metric) {
              if (it != seen.end() && it->second.series.count(series_key(m))) {
                reason = "conflict";
                detail = f.name + " repeats a series of an earlier file";
              }
            }
          }
          if (reason.empty() && series > sink.room()) {
            // Served whole or not at all, so a file over the budget is left out entirely.
            sink.count_dropped(series);
            continue;
          }
          if (reason.empty()) {
            for (auto& f : *families) {
              Seen& s = seen.try_emplace(f.name, Seen{f.type, {}}).first->second;
              for (const auto& m : f.metric)
                s.series.insert(series_key(m));
              auto family = sink.family(f.name, f.help, f.type);
              for (auto& m : f.metric)
                family.add(std::move(m));
            }
            mtimes.emplace_back(name, mtime);
            continue;
          }
        }
      }
    }
    skipped[reason] += 1;
    if (reason != "stale") sink.error(path + ": " + detail);
  }
  ::closedir(dir);

  auto mtime = sink.gauge("fabric_textfile_mtime_seconds",
                          "Modification time of each textfile served, in seconds since the epoch.");
  for (const auto& [name, value] : mtimes)
    mtime.add({{"file", name}}, value);
  auto skipped_family = sink.gauge("fabric_textfile_files_skipped",
                                   "Textfiles not served in this scrape, by reason: malformed, "
                                   "stale (older than max_age), too_large, conflict (a family "
                                   "or series clashes with an earlier file), unreadable, "
                                   "too_many (over max_files).");
  for (const auto& [reason, count] : skipped)
    skipped_family.add({{"reason", reason}}, count);
  return Ok();
}

} // namespace fabric::exporters
