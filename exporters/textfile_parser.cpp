#include "exporters/textfile_parser.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "common/strings.h"

namespace fabric::exporters {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

struct Sample {
  std::string name;
  Labels labels;
  double value;
  std::size_t line;
};

struct FamilyBuild {
  std::string name;
  std::string help;
  bool has_help = false;
  std::optional<MetricType> type;
  std::vector<Sample> samples;
};

Error bad(std::size_t line, std::string what) {
  return Error(ErrorCode::kDecode, "line " + std::to_string(line), std::move(what));
}

std::optional<MetricType> parse_type(std::string_view word) {
  if (word == "counter") return MetricType::Counter;
  if (word == "gauge") return MetricType::Gauge;
  if (word == "untyped") return MetricType::Untyped;
  if (word == "summary") return MetricType::Summary;
  if (word == "histogram") return MetricType::Histogram;
  return std::nullopt;
}

// Go's strconv.ParseFloat as the Prometheus parser uses it: decimal or exponent notation,
// NaN, Inf, +Inf, -Inf (any case).
std::optional<double> parse_value(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (lower == "inf" || lower == "+inf") return std::numeric_limits<double>::infinity();
  if (lower == "-inf") return -std::numeric_limits<double>::infinity();
  if (lower.find_first_not_of("0123456789+-.e") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(lower.c_str(), &end);
  if (end != lower.c_str() + lower.size()) return std::nullopt;
  return value;
}

void skip_blanks(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
}

std::string_view take_token(std::string_view& s) {
  skip_blanks(s);
  std::size_t n = 0;
  while (n < s.size() && s[n] != ' ' && s[n] != '\t')
    ++n;
  std::string_view token = s.substr(0, n);
  s.remove_prefix(n);
  return token;
}

std::string_view take_name(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() &&
         (std::isalnum(static_cast<unsigned char>(s[n])) || s[n] == '_' || s[n] == ':'))
    ++n;
  std::string_view name = s.substr(0, n);
  s.remove_prefix(n);
  return name;
}

// HELP text: \\ and \n are the only escapes.
Result<std::string> unescape_help(std::string_view s, std::size_t line) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i == s.size()) return bad(line, "HELP text ends in a lone backslash");
    if (s[i] == '\\')
      out += '\\';
    else if (s[i] == 'n')
      out += '\n';
    else
      out += std::string("\\") + s[i]; // kept as written, as Prometheus does
  }
  return out;
}

Result<Labels> parse_labels(std::string_view& s, std::size_t line, const TextfileLimits& limits) {
  Labels labels;
  s.remove_prefix(1); // '{'
  while (true) {
    skip_blanks(s);
    if (s.starts_with('}')) {
      s.remove_prefix(1);
      break;
    }
    std::string_view name = take_name(s);
    if (!valid_label_name(name)) return bad(line, "invalid label name '" + std::string(name) + "'");
    skip_blanks(s);
    if (!s.starts_with("=\"")) return bad(line, "expected =\" after label " + std::string(name));
    s.remove_prefix(2);
    std::string value;
    bool closed = false;
    while (!s.empty()) {
      const char c = s.front();
      s.remove_prefix(1);
      if (c == '"') {
        closed = true;
        break;
      }
      if (c != '\\') {
        value += c;
        continue;
      }
      if (s.empty()) break;
      const char e = s.front();
      s.remove_prefix(1);
      if (e == '\\')
        value += '\\';
      else if (e == '"')
        value += '"';
      else if (e == 'n')
        value += '\n';
      else
        return bad(line, std::string("invalid escape \\") + e + " in label " + std::string(name));
    }
    if (!closed) return bad(line, "label " + std::string(name) + "'s value has no closing quote");
    if (!is_valid_utf8(value))
      return bad(line, "label " + std::string(name) + " is not valid UTF-8");
    for (const auto& l : labels) {
      if (l.name == name) return bad(line, "label " + std::string(name) + " is given twice");
    }
    labels.push_back({std::string(name), std::move(value)});
    if (labels.size() > limits.max_labels)
      return bad(line, "more than " + std::to_string(limits.max_labels) + " labels");
    skip_blanks(s);
    if (s.starts_with(',')) {
      s.remove_prefix(1);
      continue;
    }
    if (!s.starts_with('}')) return bad(line, "expected , or } after label " + std::string(name));
  }
  return labels;
}

// The labels without `drop`, sorted: the identity of a series.
std::string series_key(const Labels& labels, std::string_view drop = "") {
  Labels sorted;
  for (const auto& l : labels) {
    if (l.name != drop) sorted.push_back(l);
  }
  std::sort(sorted.begin(), sorted.end());
  std::string key;
  for (const auto& l : sorted)
    key += l.name + '\0' + l.value + '\0';
  return key;
}

Labels without(const Labels& labels, std::string_view drop) {
  Labels out;
  for (const auto& l : labels) {
    if (l.name != drop) out.push_back(l);
  }
  return out;
}

std::optional<uint64_t> as_count(double v) {
  if (!(v >= 0) || v > 1.8e19 || std::floor(v) != v) return std::nullopt;
  return static_cast<uint64_t>(v);
}

// Summary and histogram samples of one label set.
struct Grouped {
  Labels labels;
  std::vector<std::pair<double, double>> points; // (quantile or le, value)
  std::optional<double> sum;
  std::optional<double> count;
  std::size_t line = 0;
};

Result<MetricFamily> build_family(FamilyBuild& f) {
  MetricFamily out;
  out.name = f.name;
  out.help = f.help;
  out.type = f.type.value_or(MetricType::Untyped);
  if (out.type != MetricType::Summary && out.type != MetricType::Histogram) {
    std::set<std::string> seen;
    for (auto& s : f.samples) {
      if (!seen.insert(series_key(s.labels)).second)
        return bad(s.line, "duplicate series of " + f.name);
      ClientMetric m;
      m.label = std::move(s.labels);
      if (out.type == MetricType::Counter) {
        if (s.value < 0 || std::isnan(s.value))
          return bad(s.line, "a counter cannot be negative or NaN");
        m.counter.value = s.value;
      } else if (out.type == MetricType::Gauge) {
        m.gauge.value = s.value;
      } else {
        m.untyped.value = s.value;
      }
      out.metric.push_back(std::move(m));
    }
    return out;
  }
  const bool histogram = out.type == MetricType::Histogram;
  const std::string_view point_label = histogram ? "le" : "quantile";
  std::map<std::string, Grouped> groups;
  std::vector<std::string> order;
  for (auto& s : f.samples) {
    const std::string key = series_key(s.labels, point_label);
    auto [it, inserted] = groups.try_emplace(key);
    Grouped& g = it->second;
    if (inserted) {
      order.push_back(key);
      g.labels = without(s.labels, point_label);
      g.line = s.line;
    }
    const std::string suffix = s.name.substr(f.name.size());
    if (suffix == "_sum" || suffix == "_count") {
      if (std::any_of(s.labels.begin(), s.labels.end(),
                      [&](const auto& l) { return l.name == point_label; }))
        return bad(s.line, s.name + " cannot have a " + std::string(point_label) + " label");
      auto& slot = suffix == "_sum" ? g.sum : g.count;
      if (slot) return bad(s.line, "duplicate series of " + s.name);
      slot = s.value;
      continue;
    }
    auto label = std::find_if(s.labels.begin(), s.labels.end(),
                              [&](const auto& l) { return l.name == point_label; });
    if (label == s.labels.end())
      return bad(s.line, s.name + " needs a " + std::string(point_label) + " label");
    auto point = parse_value(label->value);
    if (!point || std::isnan(*point))
      return bad(s.line, std::string(point_label) + " '" + label->value + "' is not a number");
    for (const auto& p : g.points) {
      if (p.first == *point) return bad(s.line, "duplicate series of " + s.name);
    }
    g.points.emplace_back(*point, s.value);
  }
  for (const auto& key : order) {
    Grouped& g = groups[key];
    if (!g.count || !g.sum) return bad(g.line, f.name + " needs its _sum and _count series");
    auto count = as_count(*g.count);
    if (!count) return bad(g.line, f.name + "_count must be a whole number");
    std::sort(g.points.begin(), g.points.end());
    ClientMetric m;
    m.label = g.labels;
    if (histogram) {
      if (g.points.empty() || !std::isinf(g.points.back().first))
        return bad(g.line, f.name + " needs a bucket with le=\"+Inf\"");
      uint64_t previous = 0;
      for (const auto& [le, value] : g.points) {
        auto cumulative = as_count(value);
        if (!cumulative || *cumulative < previous)
          return bad(g.line, f.name + "_bucket counts must be whole and cumulative");
        previous = *cumulative;
        m.histogram.bucket.push_back({*cumulative, le});
      }
      if (previous != *count) return bad(g.line, f.name + "_count differs from the +Inf bucket");
      m.histogram.sample_count = *count;
      m.histogram.sample_sum = *g.sum;
    } else {
      for (const auto& [q, value] : g.points) {
        if (q < 0 || q > 1) return bad(g.line, "quantile " + std::to_string(q) + " is not in 0-1");
        m.summary.quantile.push_back({q, value});
      }
      m.summary.sample_count = *count;
      m.summary.sample_sum = *g.sum;
    }
    out.metric.push_back(std::move(m));
  }
  return out;
}

} // namespace

std::size_t count_sample_lines(std::string_view text) {
  std::size_t count = 0;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    skip_blanks(line);
    if (!line.empty() && line.front() != '#' && line != "\r") ++count;
  }
  return count;
}

bool valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  auto first = static_cast<unsigned char>(name[0]);
  if (!(std::isalpha(first) || first == '_' || first == ':')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
  });
}

bool valid_label_name(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  auto first = static_cast<unsigned char>(name[0]);
  if (!(std::isalpha(first) || first == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Result<std::vector<MetricFamily>> parse_exposition(std::string_view text,
                                                   const TextfileLimits& limits) {
  std::vector<FamilyBuild> families;
  std::map<std::string, std::size_t, std::less<>> index;
  auto family_of = [&](std::string_view name) -> FamilyBuild& {
    auto it = index.find(name);
    if (it != index.end()) return families[it->second];
    index.emplace(std::string(name), families.size());
    families.push_back(FamilyBuild{std::string(name), "", false, std::nullopt, {}});
    return families.back();
  };
  // The summary or histogram a sample name belongs to, if any.
  auto owner_of = [&](std::string_view name) -> FamilyBuild* {
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (!name.ends_with(suffix)) continue;
      auto it = index.find(name.substr(0, name.size() - suffix.size()));
      if (it == index.end()) continue;
      FamilyBuild& f = families[it->second];
      if (f.type == MetricType::Histogram) return &f;
      if (f.type == MetricType::Summary && suffix != "_bucket") return &f;
    }
    return nullptr;
  };

  if (!is_valid_utf8(text)) return Error(ErrorCode::kDecode, "textfile", "not valid UTF-8");
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.size() > limits.max_line)
      return bad(line_number, "longer than " + std::to_string(limits.max_line) + " bytes");
    if (line.ends_with('\r')) line.remove_suffix(1);
    std::string_view rest = line;
    skip_blanks(rest);
    if (rest.empty()) continue;
    if (rest.front() == '#') {
      rest.remove_prefix(1);
      std::string_view keyword = take_token(rest);
      if (keyword != "HELP" && keyword != "TYPE") continue; // a comment
      std::string_view name = take_token(rest);
      if (!valid_metric_name(name))
        return bad(line_number,
                   "invalid metric name '" + std::string(name) + "' in " + std::string(keyword));
      FamilyBuild& f = family_of(name);
      skip_blanks(rest);
      if (keyword == "HELP") {
        if (f.has_help) return bad(line_number, "second HELP for " + f.name);
        FABRIC_ASSIGN_OR_RETURN(f.help, unescape_help(rest, line_number));
        f.has_help = true;
      } else {
        std::string_view word = take_token(rest);
        auto type = parse_type(word);
        if (!type)
          return bad(line_number, "unknown type '" + std::string(word) + "' for " + f.name);
        if (f.type) return bad(line_number, "second TYPE for " + f.name);
        if (!f.samples.empty())
          return bad(line_number, "TYPE for " + f.name + " after its samples");
        f.type = type;
      }
      continue;
    }
    std::string_view name = take_name(rest);
    if (!valid_metric_name(name))
      return bad(line_number, "a sample line must start with a metric name");
    Sample sample{std::string(name), {}, 0, line_number};
    if (rest.starts_with('{')) {
      FABRIC_ASSIGN_OR_RETURN(sample.labels, parse_labels(rest, line_number, limits));
    }
    std::string_view value_text = take_token(rest);
    auto value = parse_value(value_text);
    if (!value) return bad(line_number, "'" + std::string(value_text) + "' is not a sample value");
    sample.value = *value;
    if (!take_token(rest).empty()) {
      return bad(line_number, "timestamps are not accepted in textfiles (a sample is read when "
                              "scraped; its file's age says how old it is)");
    }
    FamilyBuild* owner = owner_of(name);
    FamilyBuild& f = owner ? *owner : family_of(name);
    if (!owner && (f.type == MetricType::Histogram || f.type == MetricType::Summary) &&
        !(f.type == MetricType::Summary && name == f.name)) {
      return bad(line_number, f.name + " is a histogram: its samples are _bucket, _sum and _count");
    }
    f.samples.push_back(std::move(sample));
  }
  std::vector<MetricFamily> out;
  for (auto& f : families) {
    if (f.samples.empty()) continue; // HELP or TYPE without samples: nothing to serve
    FABRIC_ASSIGN_OR_RETURN(MetricFamily built, build_family(f));
    out.push_back(std::move(built));
  }
  return out;
}

} // namespace fabric::exporters
