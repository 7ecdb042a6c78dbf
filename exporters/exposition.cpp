#include "exporters/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace fabric::exporters {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

void append_escaped(std::string& out, const std::string& text, bool quote) {
  const bool plain = std::none_of(text.begin(), text.end(), [quote](char c) {
    return c == '\\' || c == '\n' || (quote && c == '"');
  });
  if (plain) {
    out += text; // the common case: nothing to escape
    return;
  }
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_uint(std::string& out, uint64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, end);
}

// `name{labels,extra="value"} ` for one sample line.
void append_head(std::string& out, const MetricFamily& family, const ClientMetric& metric,
                 const char* suffix = "", const char* extra_name = nullptr, double extra = 0) {
  out += family.name;
  out += suffix;
  if (!metric.label.empty() || extra_name != nullptr) {
    out += '{';
    bool first = true;
    for (const auto& label : metric.label) {
      if (!first) out += ',';
      first = false;
      out += label.name;
      out += "=\"";
      append_escaped(out, label.value, true);
      out += '"';
    }
    if (extra_name != nullptr) {
      if (!first) out += ',';
      out += extra_name;
      out += "=\"";
      append_value(out, extra);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
}

void append_sample(std::string& out, const MetricFamily& family, const ClientMetric& metric,
                   double value) {
  append_head(out, family, metric);
  append_value(out, value);
  out += '\n';
}

void append_summary(std::string& out, const MetricFamily& family, const ClientMetric& metric) {
  const auto& s = metric.summary;
  for (const auto& q : s.quantile) {
    append_head(out, family, metric, "", "quantile", q.quantile);
    append_value(out, q.value);
    out += '\n';
  }
  append_head(out, family, metric, "_sum");
  append_value(out, s.sample_sum);
  out += '\n';
  append_head(out, family, metric, "_count");
  append_uint(out, s.sample_count);
  out += '\n';
}

void append_histogram(std::string& out, const MetricFamily& family, const ClientMetric& metric) {
  const auto& h = metric.histogram;
  bool has_inf = false;
  for (const auto& b : h.bucket) {
    append_head(out, family, metric, "_bucket", "le", b.upper_bound);
    append_uint(out, b.cumulative_count);
    out += '\n';
    has_inf |= std::isinf(b.upper_bound) && b.upper_bound > 0;
  }
  if (!has_inf) {
    append_head(out, family, metric, "_bucket", "le", INFINITY);
    append_uint(out, h.sample_count);
    out += '\n';
  }
  append_head(out, family, metric, "_sum");
  append_value(out, h.sample_sum);
  out += '\n';
  append_head(out, family, metric, "_count");
  append_uint(out, h.sample_count);
  out += '\n';
}

const char* type_name(MetricType type) {
  switch (type) {
  case MetricType::Counter: return "counter";
  case MetricType::Gauge: return "gauge";
  case MetricType::Summary: return "summary";
  case MetricType::Histogram: return "histogram";
  default: return "untyped";
  }
}

} // namespace

void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[32];
  std::to_chars_result r;
  // Counters are integers; below 2^53 a double holds them exactly, and they read best
  // without an exponent.
  if (std::trunc(value) == value && std::fabs(value) < 9007199254740992.0) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(value));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, value); // shortest form that reads back exactly
  }
  out.append(buf, r.ptr);
}

std::string render_text(const std::vector<MetricFamily>& families) {
  std::size_t estimate = 0;
  for (const auto& f : families)
    estimate += f.help.size() + 64 + f.metric.size() * (f.name.size() + 96);
  std::string out;
  out.reserve(estimate);
  for (const auto& f : families) {
    out += "# HELP ";
    out += f.name;
    out += ' ';
    append_escaped(out, f.help, false);
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += type_name(f.type);
    out += '\n';
    for (const auto& m : f.metric) {
      switch (f.type) {
      case MetricType::Counter: append_sample(out, f, m, m.counter.value); break;
      case MetricType::Gauge: append_sample(out, f, m, m.gauge.value); break;
      case MetricType::Summary: append_summary(out, f, m); break;
      case MetricType::Histogram: append_histogram(out, f, m); break;
      default: append_sample(out, f, m, m.untyped.value); break;
      }
    }
  }
  return out;
}

} // namespace fabric::exporters
