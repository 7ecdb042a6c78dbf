// nccl-tests' text output, reproduced so that what parses nccl-tests' stdout (header-driven,
// fixed 13-token and regex parsers alike) reads ours unchanged: the same '#' header lines,
// the same two column-header lines and units line, the same 13 fields per row in the same
// widths, and the same footers. Where nccl-tests would switch to exponent notation (a time
// above 9999999 us, more than 999999 wrong elements), the field grows instead: numbers are
// always fixed-point.
//
// fabric-nccltest's own facts are extra '#' lines (backend, line rate, per-rank check
// failures), which every such parser already skips.
#pragma once

#include <string>

#include "nccltest/report.h"

namespace fabric::nccltest {

// From the version line to the units line under the column headers.
std::string render_text_header(const RunHeader& header);
// 22809 (NCCL_VERSION_CODE, ncclGetVersion()) -> "2.28.9".
std::string nccl_version_text(int code);
// "#  Rank  0 Group  0 Pid  12345 on      node1 device  0 [0000:07:00] NVIDIA H100 ..."
std::string render_device_line(const RankInfo& rank);
// One result row, newline-terminated.
std::string render_text_row(const SizeRow& row);
// Per-rank check failures, the out-of-bounds and average-bandwidth footers, the line-rate
// line and the closing lines.
std::string render_text_footer(const RunFooter& footer, const std::string& program);

// nccl-tests' getFloatStr without its exponent fallback: "%*.2f", else "%*.1f", else
// "%*.0f" in `width` characters, and wider when even that does not fit.
std::string fixed_field(double value, int width);
// printf's "%g" (6 significant digits, trailing zeros removed) in fixed-point notation.
std::string fixed_g(double value);

} // namespace fabric::nccltest
