#include "exporters/textfile_collector.h"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "common/fd.h"
#include "exporters/textfile_parser.h"

namespace fabric::exporters {
namespace {

constexpr const char* kReasons[] = {"malformed",  "stale",    "too_large",    "conflict",
                                    "unreadable", "too_many", "future_mtime", "series_budget"};

// Parsing more than this in one scrape leaves freed memory worth handing back to the system.
constexpr uint64_t kTrimAfterBytes = 1 << 20;

struct SeenFamily {
  prometheus::MetricType type;
  std::set<std::string> series;
};

std::string textfile_series_key(const prometheus::ClientMetric& m) {
  auto labels = m.label;
  std::sort(labels.begin(), labels.end());
  std::string key;
  for (const auto& l : labels)
    key += l.name + '\0' + l.value + '\0';
  return key;
}

double seconds_of(const timespec& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

bool same_time(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool same_version(const TextfileCollector::Parsed& p, const struct stat& st) {
  return p.device == st.st_dev && p.inode == st.st_ino && p.size == st.st_size &&
         same_time(p.mtime, st.st_mtim) && same_time(p.ctime, st.st_ctim);
}

// The whole content of the open regular file `fd` of `size` bytes; nullopt with `detail`
// when it cannot be read or grew past `max` meanwhile.
std::optional<std::string> read_whole(int fd, off_t size, uint64_t max, std::string& detail) {
  std::string text(static_cast<std::size_t>(size) + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      detail = std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max) {
    detail = "grew past " + std::to_string(max) + " bytes while read";
    return std::nullopt;
  }
  text.resize(got);
  return text;
}

// Why `families` cannot be served beside what was served before them, or "".
std::string clash_of(const std::vector<prometheus::MetricFamily>& families,
                     const std::map<std::string, SeenFamily>& seen) {
  for (const auto& f : families) {
    if (reserved_family_name(f.name))
      return f.name + " is under a prefix of the exporter's own families";
    auto it = seen.find(f.name);
    if (it == seen.end()) continue;
    if (it->second.type != f.type) return f.name + " has another type in an earlier file";
    for (const auto& m : f.metric) {
      if (it->second.series.count(textfile_series_key(m)))
        return f.name + " repeats a series of an earlier file";
    }
  }
  return "";
}

} // namespace

bool reserved_family_name(std::string_view name) {
  // A histogram or summary called fabric_pfc emits fabric_pfc_sum: its name plus "_" is
  // what is compared.
  const std::string with_separator = std::string(name) + "_";
  return std::any_of(std::begin(kReservedPrefixes), std::end(kReservedPrefixes),
                     [&](std::string_view prefix) { return with_separator.starts_with(prefix); });
}

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

  timespec clock{};
  ::clock_gettime(CLOCK_REALTIME, &clock);
  const double now = seconds_of(clock);
  uint64_t read_budget = kReadBudgetFiles * options_.max_file_size;
  // The collector's own series (a reason each, an mtime per file) are kept room for: no
  // file can crowd out the numbers that say what happened to the files.
  const std::size_t own_series = std::size(kReasons) + names.size();
  auto room = [&] { return sink.room() > own_series ? sink.room() - own_series : 0; };
  std::size_t parse_budget = room();
  uint64_t bytes_parsed = 0;
  std::map<std::string, Parsed> kept;
  std::map<std::string, SeenFamily> seen;
  std::vector<std::pair<std::string, double>> mtimes;
  for (const auto& name : names) {
    std::string reason, detail;
    auto skip = [&](std::string why, std::string what) {
      reason = std::move(why);
      detail = std::move(what);
    };
    // O_NONBLOCK: opening a FIFO someone left there must not hang the collector.
    UniqueFd fd(
        ::openat(::dirfd(dir), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat st {};
    std::optional<Parsed> parsed;
    double mtime = 0;
    if (!fd || ::fstat(fd.get(), &st) != 0) {
      skip("unreadable", std::strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
      skip("unreadable", "not a regular file");
    } else if (static_cast<uint64_t>(st.st_size) > options_.max_file_size) {
      skip("too_large", std::to_string(st.st_size) + " bytes, more than " +
                            std::to_string(options_.max_file_size));
    } else if ((mtime = seconds_of(st.st_mtim)) >
               now + static_cast<double>(kFutureMtimeTolerance.count())) {
      skip("future_mtime", "modified " + std::to_string(static_cast<long long>(mtime - now)) +
                               " s in the future: it would never look stale");
    } else if (options_.max_age.count() > 0 &&
               now - mtime > static_cast<double>(options_.max_age.count())) {
      skip("stale", "");
    } else if (auto cached = parsed_.find(name);
               cached != parsed_.end() && same_version(cached->second, st)) {
      parsed = std::move(cached->second);
    } else if (static_cast<uint64_t>(st.st_size) > read_budget) {
      skip("too_large", "this scrape has read its " +
                            std::to_string(kReadBudgetFiles * options_.max_file_size) +
                            " bytes of changed files; it is read in a later one");
    } else if (auto text = read_whole(fd.get(), st.st_size, options_.max_file_size, detail);
               !text) {
      skip(detail.starts_with("grew") ? "too_large" : "unreadable", detail);
    } else {
      read_budget -= text->size();
      const std::size_t lines = count_sample_lines(*text);
      if (lines > parse_budget) {
        sink.count_dropped(lines);
        skip("series_budget", std::to_string(lines) + " samples, more than the " +
                                  std::to_string(parse_budget) + " left in the series budget");
      } else {
        parse_budget -= lines;
        bytes_parsed += text->size();
        parsed = Parsed{st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim, {}, ""};
        auto families = parse_exposition(*text);
        if (families.ok()) {
          parsed->families = std::move(*families);
        } else {
          parsed->error = families.error().message();
        }
      }
    }
    if (parsed && !parsed->error.empty()) {
      skip("malformed", parsed->error);
      kept.emplace(name, std::move(*parsed)); // not parsed again while it does not change
    } else if (parsed) {
      std::size_t series = 0;
      for (const auto& f : parsed->families)
        series += f.metric.size();
      if (std::string clash = clash_of(parsed->families, seen); !clash.empty()) {
        skip("conflict", clash);
      } else if (series > room()) {
        // Served whole or not at all, so a file over the budget is left out entirely.
        sink.count_dropped(series);
        skip("series_budget", std::to_string(series) + " series, more than the " +
                                  std::to_string(room()) + " left in the series budget");
      } else {
        for (const auto& f : parsed->families) {
          SeenFamily& s = seen.try_emplace(f.name, SeenFamily{f.type, {}}).first->second;
          auto family = sink.family(f.name, f.help, f.type);
          for (const auto& m : f.metric) {
            s.series.insert(textfile_series_key(m));
            family.add(m);
          }
        }
        mtimes.emplace_back(name, std::min(mtime, now));
        kept.emplace(name, std::move(*parsed));
        continue;
      }
    }
    skipped[reason] += 1;
    if (reason != "stale") sink.error(options_.directory + "/" + name + ": " + detail);
  }
  ::closedir(dir);
  parsed_ = std::move(kept);
  // A large file's parse freed far more than the exporter keeps between scrapes (the
  // process keeps freed memory below its trim threshold): give it back.
  if (bytes_parsed > kTrimAfterBytes) ::malloc_trim(0);

  auto mtime_family =
      sink.gauge("fabric_textfile_mtime_seconds",
                 "Modification time of each textfile served, in seconds since the epoch (a "
                 "time up to 60 s ahead of the clock is served as now).");
  for (const auto& [name, value] : mtimes)
    mtime_family.add({{"file", name}}, value);
  auto skipped_family = sink.gauge(
      "fabric_textfile_files_skipped",
      "Textfiles not served in this scrape, by reason: malformed, stale (older than max_age, "
      "when set), too_large, conflict (a family of the exporter's own, or a family or series "
      "of an earlier file), unreadable, too_many (over max_files), future_mtime (modified "
      "more than 60 s ahead of the clock), series_budget (more series than the budget has "
      "left).");
  for (const auto& [reason, count] : skipped)
    skipped_family.add({{"reason", reason}}, count);
  return Ok();
}

} // namespace fabric::exporters
