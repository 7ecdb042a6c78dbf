// The textfile directory: *.prom files that other programs write (fabric-nccltest --prom,
// cron jobs), validated and served with the exporter's own metrics.
//
// The contract for writers (exporters/README.md, "Textfiles"): write to a temporary name
// (not ending in .prom) in the same directory and rename() it into place, so a reader sees
// the old file or the new one, never half. A file is served whole or not at all: one that
// does not parse (textfile_parser.h), is larger than max_file_size, older than max_age, or
// whose families clash with another file's is skipped, and counted in
// fabric_textfile_files_skipped{reason}.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "exporters/collector.h"

namespace fabric::exporters {

struct TextfileOptions {
  std::string directory;
  std::chrono::seconds max_age{300};
  uint64_t max_file_size = 4 << 20;
  std::size_t max_files = 1000;
};

class TextfileCollector : public Collector {
public:
  explicit TextfileCollector(TextfileOptions options) : options_(std::move(options)) {}

  std::string name() const override { return "textfile"; }
  Result<void> collect(MetricSink& sink) override;

private:
  TextfileOptions options_;
};

} // namespace fabric::exporters
