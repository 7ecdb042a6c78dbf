#include "libs/pair_schedules/mesh_report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include <spdlog/spdlog.h>

namespace fabric::probes {
namespace {

std::optional<double> cell_of(const MeshReport& r, std::size_t row, std::size_t col) {
  if ((row == col && !r.self_pairs) || row >= r.matrix.size() || col >= r.matrix[row].size())
    return std::nullopt;
  return r.matrix[row][col];
}

std::string host_name(const MeshReport& r, std::size_t i) {
  return i < r.hosts.size() ? r.hosts[i] : "#" + std::to_string(i);
}

// One number of decimals for a whole report, so that a column lines up and the cells can be
// told apart: two significant digits on the smallest magnitude, then more while two values
// that differ in their third significant digit would print the same (0.047 and 0.059 Gb/s
// both read "0.1" at a fixed one decimal).
class ValueFormat {
public:
  explicit ValueFormat(const MeshReport& r) {
    std::vector<double> values;
    for (const auto& row : r.matrix)
      for (const auto& v : row)
        if (v && std::isfinite(*v)) values.push_back(*v);
    for (const auto& c : r.outliers.cells)
      if (std::isfinite(c.value)) values.push_back(c.value);
    for (const auto& t : r.retests)
      if (t.value && std::isfinite(*t.value)) values.push_back(*t.value);
    double smallest = 0;
    for (double v : values)
      if (v != 0 && (smallest == 0 || std::fabs(v) < smallest)) smallest = std::fabs(v);
    if (smallest == 0) return; // nothing but zeros: the default decimals
    decimals_ = std::clamp(1 - static_cast<int>(std::floor(std::log10(smallest))), 0, kMaxDecimals);
    // Values distinct at three significant digits, in order: neighbours are the ones to tell apart.
    std::set<double> distinct;
    for (double v : values)
      distinct.insert(three_digits(v));
    while (decimals_ < kMaxDecimals && !tells_apart(distinct))
      ++decimals_;
  }

  std::string operator()(double v) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals_, v);
    return buf;
  }

private:
  static constexpr int kMaxDecimals = 6;

  static double three_digits(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return std::strtod(buf, nullptr);
  }

  bool tells_apart(const std::set<double>& sorted) const {
    std::string previous;
    bool first = true;
    for (double v : sorted) {
      std::string text = (*this)(v);
      if (!first && text == previous) return false;
      previous = std::move(text);
      first = false;
    }
    return true;
  }

  int decimals_ = 1;
};

std::set<std::pair<std::size_t, std::size_t>> flagged_cells(const MeshReport& r) {
  std::set<std::pair<std::size_t, std::size_t>> out;
  for (const auto& c : r.outliers.cells)
    out.insert({c.source, c.destination});
  return out;
}

std::set<std::size_t> flagged_hosts(const MeshReport& r) {
  std::set<std::size_t> out;
  for (const auto& h : r.outliers.hosts)
    out.insert(h.host);
  return out;
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}
std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&apos;"; break;
    default:
      // Control characters other than tab/newline are not allowed in XML 1.0 at all.
      if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') {
        out += '?';
      } else {
        out += ch;
      }
    }
  }
  return out;
}

void write_optional(json::Writer& out, std::string_view key, const std::optional<double>& v) {
  out.key(key);
  if (v) {
    out.value(*v);
  } else {
    out.null();
  }
}

// --- SVG colours ---

struct Rgb {
  double r, g, b;
};
constexpr Rgb kBad{215, 48, 39}, kMiddle{254, 224, 139}, kGood{26, 152, 80};

std::string rgb_text(const Rgb& c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(c.r)),
                static_cast<int>(std::lround(c.g)), static_cast<int>(std::lround(c.b)));
  return buf;
}

// t = 0 is bad, 1 is good.
std::string colour_at(double t) {
  t = std::clamp(t, 0.0, 1.0);
  auto mix = [](const Rgb& a, const Rgb& b, double f) {
    return Rgb{a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
  };
  return rgb_text(t < 0.5 ? mix(kBad, kMiddle, t * 2) : mix(kMiddle, kGood, (t - 0.5) * 2));
}

struct Scale {
  double lo = 0, hi = 1; // value range shown
  bool higher_is_better = true;
  double goodness(double v) const {
    double t = hi > lo ? (v - lo) / (hi - lo) : 1.0;
    return higher_is_better ? t : 1.0 - t;
  }
};

Scale scale_for(const MeshReport& r) {
  Scale s;
  s.higher_is_better = r.better == Better::kHigher;
  bool any = false;
  double lo = 0, hi = 0;
  for (std::size_t i = 0; i < r.matrix.size(); ++i) {
    for (std::size_t j = 0; j < r.matrix.size(); ++j) {
      if (auto v = cell_of(r, i, j)) {
        lo = any ? std::min(lo, *v) : *v;
        hi = any ? std::max(hi, *v) : *v;
        any = true;
      }
    }
  }
  if (!any) return s;
  // Keep a minimum span so that small noise stays green (see the header).
  if (s.higher_is_better) {
    lo = std::min(lo, hi * 0.8);
  } else {
    hi = std::max(hi, lo * 1.25);
  }
  s.lo = lo;
  s.hi = hi;
  return s;
}

} // namespace

std::string exact_number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

std::string mesh_csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string render_mesh_document(const std::vector<std::string>& hosts, std::size_t tests,
                                 const std::function<void(json::Writer&, std::size_t)>& write_test,
                                 bool pretty) {
  json::Writer w(pretty);
  w.begin_object().field("schema_version", json::kSchemaVersion).field("test", "mesh");
  w.key("hosts").begin_array();
  for (const auto& h : hosts)
    w.value(h);
  w.end_array();
  w.key("tests").begin_array();
  for (std::size_t t = 0; t < tests; ++t)
    write_test(w, t);
  w.end_array().end_object();
  return w.str();
}

std::string render_mesh_text(const MeshReport& r) {
  const ValueFormat fmt(r);
  const std::size_t n = r.hosts.size();
  const auto cells = flagged_cells(r);
  const auto hosts = flagged_hosts(r);
  std::string out = r.metric + " (" + r.unit + "): rows are sources, columns destinations\n";

  std::size_t label_width = 0;
  for (std::size_t i = 0; i < n; ++i)
    label_width = std::max(label_width, r.hosts[i].size() + (hosts.count(i) ? 1 : 0));
  std::vector<std::vector<std::string>> text(n, std::vector<std::string>(n));
  std::size_t width = 1;
  for (std::size_t i = 0; i < n; ++i) {
    width = std::max(width, r.hosts[i].size());
    for (std::size_t j = 0; j < n; ++j) {
      auto v = cell_of(r, i, j);
      std::string t = i == j ? "-" : v ? fmt(*v) : "x";
      if (cells.count({i, j})) t = "*" + t;
      width = std::max(width, t.size());
      text[i][j] = std::move(t);
    }
  }
  out += std::string(label_width, ' ');
  for (std::size_t j = 0; j < n; ++j)
    out += "  " + pad_left(r.hosts[j], width);
  out += "\n";
  for (std::size_t i = 0; i < n; ++i) {
    out += pad_right((hosts.count(i) ? "!" : "") + r.hosts[i], label_width);
    for (std::size_t j = 0; j < n; ++j)
      out += "  " + pad_left(text[i][j], width);
    out += "\n";
  }

  if (r.outliers.hosts.empty() && r.outliers.cells.empty()) {
    out += "no outliers\n";
  }
  for (const auto& h : r.outliers.hosts)
    out += "! slow host " + host_name(r, h.host) + ": " + h.reason + "\n";
  for (const auto& c : r.outliers.cells) {
    out += "* slow pair " + host_name(r, c.source) + " -> " + host_name(r, c.destination) + ": " +
           fmt(c.value) + " " + r.unit + "; " + c.reason + "\n";
  }
  for (const auto& t : r.retests) {
    out += "retest " + host_name(r, t.source) + " -> " + host_name(r, t.destination) + ": ";
    out += t.value ? fmt(*t.value) + " " + r.unit : "failed: " + t.error;
    if (auto first = cell_of(r, t.source, t.destination)) out += " (first run " + fmt(*first) + ")";
    out += "\n";
  }
  // A host that answered no pair at all is one line with the pairs it cost and its first
  // error (2(n-1) near-identical chains otherwise); every chain goes to the debug log.
  std::vector<std::size_t> failed_pairs(r.hosts.size(), 0);
  for (const auto& f : r.failures) {
    spdlog::debug("mesh: no result {} -> {}: {}", host_name(r, f.source),
                  host_name(r, f.destination), f.error);
    if (f.source < failed_pairs.size()) ++failed_pairs[f.source];
    if (f.destination < failed_pairs.size()) ++failed_pairs[f.destination];
  }
  const std::size_t all_pairs = r.hosts.size() < 2 ? 0 : 2 * (r.hosts.size() - 1);
  auto dead = [&](std::size_t h) {
    return all_pairs > 0 && h < failed_pairs.size() && failed_pairs[h] == all_pairs;
  };
  std::set<std::size_t> said;
  for (const auto& f : r.failures) {
    for (std::size_t h : {f.source, f.destination}) {
      if (!dead(h) || !said.insert(h).second) continue;
      out += "x no result for host " + host_name(r, h) + " in any of its " +
             std::to_string(all_pairs) + " pairs; first: " + f.error +
             " (every error: --log-level debug)\n";
    }
    if (dead(f.source) || dead(f.destination)) continue;
    out += "x no result " + host_name(r, f.source) + " -> " + host_name(r, f.destination) + ": " +
           f.error + "\n";
  }
  return out;
}

void write_mesh_json(json::Writer& out, const MeshReport& r) {
  const std::size_t n = r.hosts.size();
  out.begin_object();
  out.field("schema_version", json::kSchemaVersion);
  out.field("metric", r.metric);
  out.field("unit", r.unit);
  out.field("better", r.better == Better::kHigher ? "higher" : "lower");
  out.key("hosts").begin_array();
  for (const auto& h : r.hosts)
    out.value(h);
  out.end_array();
  out.key("matrix").begin_array();
  for (std::size_t i = 0; i < n; ++i) {
    out.begin_array();
    for (std::size_t j = 0; j < n; ++j) {
      auto v = cell_of(r, i, j);
      if (v) {
        out.value(*v);
      } else {
        out.null();
      }
    }
    out.end_array();
  }
  out.end_array();

  out.key("outliers").begin_object();
  out.key("hosts").begin_array();
  for (const auto& h : r.outliers.hosts) {
    out.begin_object();
    out.field("host", host_name(r, h.host));
    out.field("as_source", h.as_source);
    out.field("as_destination", h.as_destination);
    write_optional(out, "source_median", h.source_median);
    write_optional(out, "destination_median", h.destination_median);
    out.field("reason", h.reason);
    out.end_object();
  }
  out.end_array();
  out.key("cells").begin_array();
  for (const auto& c : r.outliers.cells) {
    out.begin_object();
    out.field("source", host_name(r, c.source));
    out.field("destination", host_name(r, c.destination));
    out.field("value", c.value);
    out.field("row_median", c.row_median);
    out.field("column_median", c.column_median);
    out.field("reason", c.reason);
    out.end_object();
  }
  out.end_array();
  out.end_object();

  out.key("retests").begin_array();
  for (const auto& t : r.retests) {
    out.begin_object();
    out.field("source", host_name(r, t.source));
    out.field("destination", host_name(r, t.destination));
    write_optional(out, "value", t.value);
    out.key("error");
    if (t.error.empty()) {
      out.null();
    } else {
      out.value(t.error);
    }
    out.end_object();
  }
  out.end_array();
  out.key("failures").begin_array();
  for (const auto& f : r.failures) {
    out.begin_object();
    out.field("source", host_name(r, f.source));
    out.field("destination", host_name(r, f.destination));
    out.field("error", f.error);
    out.end_object();
  }
  out.end_array();
  out.end_object();
}

std::string render_mesh_json(const MeshReport& r, bool pretty) {
  json::Writer out(pretty);
  write_mesh_json(out, r);
  return out.str();
}

std::string render_mesh_csv(const MeshReport& r) {
  const std::size_t n = r.hosts.size();
  std::string out = "source";
  for (const auto& h : r.hosts)
    out += "," + mesh_csv_field(h);
  out += "\r\n";
  for (std::size_t i = 0; i < n; ++i) {
    out += mesh_csv_field(r.hosts[i]);
    for (std::size_t j = 0; j < n; ++j) {
      out += ",";
      if (auto v = cell_of(r, i, j)) out += exact_number(*v);
    }
    out += "\r\n";
  }
  return out;
}

std::string render_mesh_svg(const MeshReport& r) {
  const std::size_t n = r.hosts.size();
  const auto cells = flagged_cells(r);
  const auto hosts = flagged_hosts(r);
  const Scale scale = scale_for(r);
  const ValueFormat fmt(r);

  // Geometry, in pixels. Labels are 12px sans-serif: about 7px per character.
  constexpr int kCell = 44, kChar = 7, kPad = 10, kTitle = 36, kLegend = 70;
  std::size_t longest = 4;
  for (const auto& h : r.hosts)
    longest = std::max(longest, h.size() + 1);
  const int label = static_cast<int>(longest) * kChar + kPad;
  const int left = kPad + label, top = kTitle + label;
  const int grid = static_cast<int>(n) * kCell;
  const std::string title = r.metric + " (" + r.unit + "): rows are sources, columns destinations";
  // The title is 14px bold: about 8.5px per character.
  const int title_width = 2 * kPad + static_cast<int>(title.size()) * 17 / 2;
  const int width = std::max({left + grid + kPad, title_width, 460});
  const int height = top + grid + kLegend;
  const bool values_fit = n <= 40;

  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
  line("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
       "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
       std::to_string(height) + "\" font-family=\"sans-serif\" font-size=\"12\">");
  line("<defs><linearGradient id=\"scale\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">");
  // The legend runs from the scale's low value to its high one.
  for (int k = 0; k <= 4; ++k) {
    const double value = scale.lo + (scale.hi - scale.lo) * k / 4.0;
    line("<stop offset=\"" + std::to_string(k * 25) + "%\" stop-color=\"" +
         colour_at(scale.goodness(value)) + "\"/>");
  }
  line("</linearGradient></defs>");
  line("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>");
  line("<text x=\"" + std::to_string(kPad) + "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" +
       xml_escape(title) + "</text>");

  auto label_attrs = [&](std::size_t i) {
    return hosts.count(i) ? std::string(" fill=\"#b2182b\" font-weight=\"bold\"")
                          : std::string(" fill=\"#000000\"");
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::string name = xml_escape((hosts.count(i) ? "!" : "") + r.hosts[i]);
    const int y = top + static_cast<int>(i) * kCell + kCell / 2 + 4;
    line("<text x=\"" + std::to_string(left - 6) + "\" y=\"" + std::to_string(y) +
         "\" text-anchor=\"end\"" + label_attrs(i) + ">" + name + "</text>");
    const int x = left + static_cast<int>(i) * kCell + kCell / 2 + 4;
    line("<text transform=\"translate(" + std::to_string(x) + "," + std::to_string(top - 6) +
         ") rotate(-90)\" text-anchor=\"start\"" + label_attrs(i) + ">" + name + "</text>");
  }

  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const int x = left + static_cast<int>(j) * kCell, y = top + static_cast<int>(i) * kCell;
      const auto v = cell_of(r, i, j);
      const bool flagged = cells.count({i, j}) > 0;
      const bool blank = i == j && !r.self_pairs;
      std::string fill = blank ? "#f2f2f2" : v ? colour_at(scale.goodness(*v)) : "#bdbdbd";
      std::string tip = xml_escape(r.hosts[i] + " -> " + r.hosts[j] + ": ");
      tip += blank ? "-" : v ? xml_escape(fmt(*v) + " " + r.unit) : "no result";
      if (flagged) tip += " (slow pair)";
      line("<g><title>" + tip + "</title><rect x=\"" + std::to_string(x + 1) + "\" y=\"" +
           std::to_string(y + 1) + "\" width=\"" + std::to_string(kCell - 2) + "\" height=\"" +
           std::to_string(kCell - 2) + "\" fill=\"" + fill + "\"" +
           (flagged ? " stroke=\"#000000\" stroke-width=\"3\"" : "") + "/>");
      if (!blank && values_fit) {
        line("<text x=\"" + std::to_string(x + kCell / 2) + "\" y=\"" +
             std::to_string(y + kCell / 2 + 4) + "\" text-anchor=\"middle\" font-size=\"10\">" +
             (v ? xml_escape(fmt(*v)) : std::string("x")) + "</text>");
      }
      line("</g>");
    }
  }

  // Legend: the colour bar with its two ends, then the meaning of grey and outlines.
  const int ly = top + grid + 20;
  line("<rect x=\"" + std::to_string(kPad) + "\" y=\"" + std::to_string(ly) +
       "\" width=\"200\" height=\"12\" fill=\"url(#scale)\" stroke=\"#666666\"/>");
  line("<text x=\"" + std::to_string(kPad) + "\" y=\"" + std::to_string(ly + 28) + "\">" +
       xml_escape(fmt(scale.lo) + " " + r.unit) + "</text>");
  line("<text x=\"" + std::to_string(kPad + 200) + "\" y=\"" + std::to_string(ly + 28) +
       "\" text-anchor=\"end\">" + xml_escape(fmt(scale.hi) + " " + r.unit) + "</text>");
  // The other entries only where the map has such a cell or host.
  bool any_missing = false;
  for (std::size_t i = 0; i < n && !any_missing; ++i)
    for (std::size_t j = 0; j < n && !any_missing; ++j)
      any_missing = !(i == j && !r.self_pairs) && !cell_of(r, i, j);
  int kx = kPad + 220;
  if (any_missing) {
    line("<rect x=\"" + std::to_string(kx) + "\" y=\"" + std::to_string(ly) +
         "\" width=\"12\" height=\"12\" fill=\"#bdbdbd\"/>");
    line("<text x=\"" + std::to_string(kx + 16) + "\" y=\"" + std::to_string(ly + 10) +
         "\">no result</text>");
    kx += 90;
  }
  if (!cells.empty()) {
    line("<rect x=\"" + std::to_string(kx) + "\" y=\"" + std::to_string(ly) +
         "\" width=\"12\" height=\"12\" fill=\"#ffffff\" stroke=\"#000000\" stroke-width=\"3\"/>");
    line("<text x=\"" + std::to_string(kx + 16) + "\" y=\"" + std::to_string(ly + 10) +
         "\">slow pair</text>");
  }
  if (!hosts.empty()) {
    line("<text x=\"" + std::to_string(kPad + 220) + "\" y=\"" + std::to_string(ly + 28) +
         "\" fill=\"#b2182b\" font-weight=\"bold\">!host: slow host</text>");
  }
  line("</svg>");
  return out;
}

} // namespace fabric::probes
