// The Prometheus text format 0.0.4 for a list of metric families: what /metrics serves.
//
// prometheus-cpp 1.0.1's TextSerializer is not used for it: it writes through std::ostream
// (a third of a scrape's CPU time at 20,000 series) and does not escape HELP text, so a
// textfile's HELP with an escaped newline would come out as two lines. This writer appends
// to one string, escapes HELP (\\ and \n) and label values (\\, \" and \n), and prints
// numbers in their shortest exact form (integers below 2^53 without an exponent).
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

namespace fabric::exporters {

std::string render_text(const std::vector<prometheus::MetricFamily>& families);

// A sample value as the text format writes it: "42", "0.25", "1.5e+20", "NaN", "+Inf".
void append_value(std::string& out, double value);

} // namespace fabric::exporters
