// The textfile directory: *.prom files that other programs write (fabric-nccltest --prom,
// cron jobs), validated and served with the exporter's own metrics.
//
// The contract for writers (exporters/README.md, "Textfiles"): write to a temporary name
// (not ending in .prom) in the same directory and rename() it into place, so a reader sees
// the old file or the new one, never half. A file is served whole or not at all, however
// old, as node_exporter serves it: fabric_textfile_mtime_seconds{file} is the staleness
// signal (max_age, when set, drops older files instead). A file is skipped, and counted in
// fabric_textfile_files_skipped{reason}, when it does not parse (textfile_parser.h), is
// larger than max_file_size, names a family of the exporter's own (kReservedPrefixes) or
// one another file has, carries an mtime in the future, or does not fit the series budget.
//
// Bounded cost: a file unchanged since the last scrape (same inode, size, mtime and ctime)
// is not read again; a scrape reads at most kReadBudgetFiles * max_file_size bytes of
// changed files and parses at most the collector's series budget in sample lines, counted
// before parsing.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include <ctime>

#include <prometheus/metric_family.h>

#include "exporters/collector.h"

namespace fabric::exporters {

// Families under these prefixes are the exporter's: built-in collectors and self metrics.
// A textfile that names one is refused, so no scrape ever holds a family twice.
inline constexpr std::string_view kReservedPrefixes[] = {
    "fabric_exporter_", "fabric_textfile_", "fabric_rdma_", "fabric_pfc_",
    "fabric_dcb_",      "fabric_nccl_",     "fabric_pod_",  "fabric_accounting_"};

bool reserved_family_name(std::string_view name);

// A file's mtime this far ahead of the clock counts as now (coarse or skewed clocks);
// further ahead, it is refused: it would look fresh for ever.
inline constexpr std::chrono::seconds kFutureMtimeTolerance{60};

// How many files' worth of max_file_size one scrape reads at most.
inline constexpr uint64_t kReadBudgetFiles = 4;

struct TextfileOptions {
  std::string directory;
  std::chrono::seconds max_age{0}; // 0: served however old
  uint64_t max_file_size = 4 << 20;
  std::size_t max_files = 1000;
};

class TextfileCollector : public Collector {
public:
  explicit TextfileCollector(TextfileOptions options) : options_(std::move(options)) {}

  std::string name() const override { return "textfile"; }
  Result<void> collect(MetricSink& sink) override;

  // A file's content as last parsed, and what identified that version.
  struct Parsed {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec mtime{};
    timespec ctime{};
    std::vector<prometheus::MetricFamily> families;
    std::string error; // the parse error: a malformed file is not parsed again either
  };

private:
  TextfileOptions options_;
  std::map<std::string, Parsed> parsed_; // files served or malformed in the last scrape
};

} // namespace fabric::exporters
