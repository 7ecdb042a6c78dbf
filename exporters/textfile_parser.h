// The Prometheus text exposition format (0.0.4), parsed strictly, for the textfile
// directory: a file either parses whole or is refused with the line that is wrong, so no
// half of a file is ever served.
//
// Accepted: # HELP / # TYPE (counter, gauge, untyped, summary, histogram) before the
// family's samples, other comments, blank lines, samples `name{label="value",...} value`.
// Refused: timestamps (a textfile is read at scrape time; a stale sample must not look
// fresh), duplicate series, a second HELP or TYPE, TYPE after samples, invalid names,
// labels or UTF-8, histograms without their +Inf bucket, _count or _sum.
#pragma once

#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "common/result.h"

namespace fabric::exporters {

struct TextfileLimits {
  std::size_t max_line = 64 * 1024;
  std::size_t max_labels = 64;
};

// Families in the order their first line appeared. Errors are kDecode: "line 7: ...".
Result<std::vector<prometheus::MetricFamily>> parse_exposition(std::string_view text,
                                                               const TextfileLimits& limits = {});

// The sample lines of `text` (neither blank nor comments), counted without parsing: what a
// file would cost, known before it costs it.
std::size_t count_sample_lines(std::string_view text);

bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

} // namespace fabric::exporters
