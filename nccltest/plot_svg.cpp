// busbw against message size as a standalone SVG: a log-2 size axis, a linear bandwidth
// axis from 0 scaled to the data, one line per (type, op, placement), a tooltip per point,
// and the line-rate ceiling as a dashed line when the run has one that fits the scale (else
// named above the plot). Readable in any browser.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/units.h"
#include "nccltest/outputs.h"
#include "nccltest/text_report.h"

namespace fabric::nccltest {
namespace {

constexpr double kWidth = 900, kHeight = 520;
constexpr double kLeft = 90, kRight = 200, kTop = 50, kBottom = 70;
constexpr double kCeilingInRange = 2; // the line rate is drawn when at most this x the data

// A coordinate with `decimals` decimals.
std::string fmt(double a, int decimals = 1) {
  char t[64];
  std::snprintf(t, sizeof t, "%.*f", decimals, a);
  return t;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points; // (bytes, busbw)
};

} // namespace

std::string render_busbw_plot(const RunRecord& r) {
  std::map<std::string, Series> by_label;
  std::vector<std::string> order;
  double max_bw = 0, min_size = 0, max_size = 1;
  bool first = true;
  for (const SizeRow& row : r.rows) {
    if (row.bytes == 0) continue; // no place on a log axis
    for (bool in_place : {false, true}) {
      const PlacementResult& p = in_place ? row.in_place : row.out_of_place;
      std::string label = std::string(data_type_name(row.type)) +
                          (row.op == "none" ? "" : " " + row.op) +
                          (in_place ? " in-place" : " out-of-place");
      auto [it, fresh] = by_label.try_emplace(label);
      if (fresh) {
        order.push_back(label);
        it->second.label = label;
      }
      it->second.points.emplace_back(static_cast<double>(row.bytes), p.busbw);
      max_bw = std::max(max_bw, p.busbw);
    }
    double b = static_cast<double>(row.bytes);
    min_size = first ? b : std::min(min_size, b);
    max_size = first ? b : std::max(max_size, b);
    first = false;
  }
  const auto& ceiling = r.footer.line_rate.ceiling_gbytes;
  // The axis is scaled to the data: a line rate ten times the measured busbw would leave
  // the curve flat on the axis. The ceiling joins the range when it is within twice the
  // data, and is otherwise named in a corner as above the scale.
  const bool ceiling_in_range = ceiling && (max_bw <= 0 || *ceiling <= kCeilingInRange * max_bw);
  // A round step for the bandwidth axis (1, 2, 2.5 or 5 times a power of ten), about five
  // of them, and the top at a whole step above the highest value.
  const double highest = ceiling_in_range ? std::max(max_bw, *ceiling) : max_bw;
  double step_bw = 1;
  if (highest > 0) {
    const double raw = highest / 5;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double residual = raw / magnitude;
    step_bw = magnitude * (residual <= 1     ? 1
                           : residual <= 2   ? 2
                           : residual <= 2.5 ? 2.5
                           : residual <= 5   ? 5
                                             : 10);
  }
  const int steps = highest > 0 ? static_cast<int>(std::floor(highest / step_bw)) + 1 : 5;
  const double top = step_bw * steps;
  const double lx0 = std::log2(std::max(min_size, 1.0));
  double lx1 = std::log2(std::max(max_size, 1.0));
  if (lx1 <= lx0) lx1 = lx0 + 1;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto x_of = [&](double bytes) { return kLeft + (std::log2(bytes) - lx0) / (lx1 - lx0) * pw; };
  auto y_of = [&](double bw) { return kTop + ph - bw / top * ph; };

  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(kWidth, 0) +
                  "\" height=\"" + fmt(kHeight, 0) +
                  "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::string title = r.collective + " bus bandwidth, " + std::to_string(r.header.ranks.size()) +
                      " ranks on " + std::to_string(r.header.nodes) + " node" +
                      (r.header.nodes == 1 ? "" : "s") + ", " + r.header.backend + " backend";
  s += "<text x=\"" + fmt(kLeft, 0) + "\" y=\"28\" font-size=\"16\">" + escape(title) + "</text>\n";
  // Axes, grid and ticks.
  s += "<g stroke=\"#999\" stroke-width=\"1\">\n";
  s += "<line x1=\"" + fmt(kLeft) + "\" y1=\"" + fmt(kTop + ph) + "\" x2=\"" + fmt(kLeft + pw) +
       "\" y2=\"" + fmt(kTop + ph) + "\"/>\n";
  s += "<line x1=\"" + fmt(kLeft) + "\" y1=\"" + fmt(kTop) + "\" x2=\"" + fmt(kLeft) + "\" y2=\"" +
       fmt(kTop + ph) + "\"/>\n</g>\n";
  const int span = static_cast<int>(std::ceil(lx1 - lx0));
  const int step = std::max(1, (span + 7) / 8); // at most about eight size labels
  for (int e = static_cast<int>(std::ceil(lx0)); e <= static_cast<int>(std::floor(lx1));
       e += step) {
    double x = x_of(std::ldexp(1.0, e));
    s += "<line x1=\"" + fmt(x) + "\" y1=\"" + fmt(kTop) + "\" x2=\"" + fmt(x) + "\" y2=\"" +
         fmt(kTop + ph) + "\" stroke=\"#eee\"/>\n";
    s += "<text x=\"" + fmt(x) + "\" y=\"" + fmt(kTop + ph + 18) + "\" text-anchor=\"middle\">" +
         escape(units::format_size(uint64_t{1} << e)) + "</text>\n";
  }
  for (int i = 0; i <= steps; ++i) {
    double bw = step_bw * i, y = y_of(bw);
    s += "<line x1=\"" + fmt(kLeft) + "\" y1=\"" + fmt(y) + "\" x2=\"" + fmt(kLeft + pw) +
         "\" y2=\"" + fmt(y) + "\" stroke=\"#eee\"/>\n";
    s += "<text x=\"" + fmt(kLeft - 8) + "\" y=\"" + fmt(y + 4) + "\" text-anchor=\"end\">" +
         escape(fixed_g(bw)) + "</text>\n";
  }
  s += "<text x=\"" + fmt(kLeft + pw / 2) + "\" y=\"" + fmt(kHeight - 20) +
       "\" text-anchor=\"middle\">message size (log scale)</text>\n";
  s += "<text transform=\"translate(16," + fmt(kTop + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">busbw (GB/s)</text>\n";
  if (ceiling && !ceiling_in_range) {
    s += "<text x=\"" + fmt(kLeft + pw) + "\" y=\"" + fmt(kTop - 8) +
         "\" text-anchor=\"end\" fill=\"#c00\">" +
         escape("line rate " + fixed_g(*ceiling) + " GB/s, above this scale (" +
                r.footer.line_rate.basis + ")") +
         "</text>\n";
  }
  if (ceiling_in_range) {
    double y = y_of(*ceiling);
    s += "<line x1=\"" + fmt(kLeft) + "\" y1=\"" + fmt(y) + "\" x2=\"" + fmt(kLeft + pw) +
         "\" y2=\"" + fmt(y) +
         "\" stroke=\"#c00\" stroke-dasharray=\"6,4\" stroke-width=\"1.5\"><title>" +
         escape("line-rate ceiling " + fixed_g(*ceiling) + " GB/s (" + r.footer.line_rate.basis +
                ")") +
         "</title></line>\n";
    s += "<text x=\"" + fmt(kLeft + pw + 6) + "\" y=\"" + fmt(y + 4) +
         "\" fill=\"#c00\">line rate " + escape(fixed_g(*ceiling)) + " GB/s</text>\n";
  }
  static constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                             "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Series& series = by_label[order[i]];
    const char* colour = kColours[i % std::size(kColours)];
    std::string path;
    for (const auto& [bytes, bw] : series.points) {
      path += fmt(x_of(bytes)) + "," + fmt(y_of(bw)) + " ";
    }
    s += "<polyline fill=\"none\" stroke=\"" + std::string(colour) +
         "\" stroke-width=\"2\" points=\"" + path + "\"/>\n";
    for (const auto& [bytes, bw] : series.points) {
      s += "<circle cx=\"" + fmt(x_of(bytes)) + "\" cy=\"" + fmt(y_of(bw)) + "\" r=\"3\" fill=\"" +
           colour + "\"><title>" +
           escape(series.label + ": " + units::format_size(static_cast<uint64_t>(bytes)) + ", " +
                  fixed_g(bw) + " GB/s") +
           "</title></circle>\n";
    }
    double ly = kTop + 10 + 18.0 * static_cast<double>(i);
    s += "<line x1=\"" + fmt(kLeft + pw + 10) + "\" y1=\"" + fmt(ly + 40) + "\" x2=\"" +
         fmt(kLeft + pw + 30) + "\" y2=\"" + fmt(ly + 40) + "\" stroke=\"" + colour +
         "\" stroke-width=\"2\"/>\n";
    s += "<text x=\"" + fmt(kLeft + pw + 36) + "\" y=\"" + fmt(ly + 44) + "\">" +
         escape(series.label) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

} // namespace fabric::nccltest
