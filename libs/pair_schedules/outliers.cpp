#include "libs/pair_schedules/outliers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fabric::probes {
namespace {

// Makes the MAD of normally distributed values an estimate of their standard deviation.
constexpr double kMadScale = 1.4826;

double median_of_sorted(const std::vector<double>& v) {
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

class Judge {
public:
  explicit Judge(const OutlierOptions& options) : options_(options) {}

  // How much worse than the median `value` is (negative when better).
  double worse_by(double value, double median) const {
    return options_.better == Better::kHigher ? median - value : value - median;
  }
  bool is_outlier(double value, const RobustStats& s) const {
    if (s.count == 0) return false;
    const double limit =
        std::max(options_.threshold * s.mad, options_.min_relative * std::fabs(s.median));
    return worse_by(value, s.median) > limit;
  }
  // "12.3 is 87% below the row's median 95"
  std::string compare(double value, double median, const std::string& whose) const {
    const double by = worse_by(value, median);
    std::string how = number(by);
    if (median != 0) {
      char pct[32];
      std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * by / std::fabs(median));
      how = pct;
    }
    return how + (options_.better == Better::kHigher ? " below " : " above ") + whose + " median " +
           number(median);
  }
  std::string limits() const {
    return "(limit: " + number(options_.threshold) + " MADs or " +
           number(100 * options_.min_relative) + "% of the median, whichever is larger)";
  }

private:
  const OutlierOptions& options_;
};

} // namespace

RobustStats robust_stats(std::vector<double> values) {
  RobustStats s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.median = median_of_sorted(values);
  for (double& v : values)
    v = std::fabs(v - s.median);
  std::sort(values.begin(), values.end());
  s.mad = kMadScale * median_of_sorted(values);
  return s;
}

Result<OutlierReport> find_outliers(const MeshMatrix& matrix, const OutlierOptions& options) {
  const std::size_t n = matrix.size();
  if (!(options.threshold > 0) || !std::isfinite(options.threshold)) {
    return Error(ErrorCode::kInvalidArgument, "outlier threshold",
                 "must be a positive number of MADs, got " + number(options.threshold));
  }
  if (!(options.min_relative >= 0) || !std::isfinite(options.min_relative)) {
    return Error(ErrorCode::kInvalidArgument, "outlier floor",
                 "must be a fraction of at least 0, got " + number(options.min_relative));
  }
  for (std::size_t r = 0; r < n; ++r) {
    if (matrix[r].size() != n) {
      return Error(ErrorCode::kInvalidArgument, "mesh matrix",
                   "row " + std::to_string(r) + " has " + std::to_string(matrix[r].size()) +
                       " cells; a matrix of " + std::to_string(n) + " hosts needs " +
                       std::to_string(n));
    }
    for (std::size_t c = 0; c < n; ++c) {
      if (matrix[r][c] && !std::isfinite(*matrix[r][c])) {
        return Error(ErrorCode::kInvalidArgument, "mesh matrix",
                     "cell [" + std::to_string(r) + "][" + std::to_string(c) +
                         "] is not a finite number");
      }
    }
  }

  // The diagonal never counts, whatever it holds.
  auto value_at = [&](std::size_t r, std::size_t c) -> std::optional<double> {
    return r == c ? std::nullopt : matrix[r][c];
  };
  std::vector<RobustStats> rows(n), columns(n);
  for (std::size_t h = 0; h < n; ++h) {
    std::vector<double> row, column;
    for (std::size_t k = 0; k < n; ++k) {
      if (auto v = value_at(h, k)) row.push_back(*v);
      if (auto v = value_at(k, h)) column.push_back(*v);
    }
    rows[h] = robust_stats(std::move(row));
    columns[h] = robust_stats(std::move(column));
  }

  Judge judge(options);
  OutlierReport report;

  std::vector<double> source_medians, destination_medians;
  for (std::size_t h = 0; h < n; ++h) {
    if (rows[h].count > 0) source_medians.push_back(rows[h].median);
    if (columns[h].count > 0) destination_medians.push_back(columns[h].median);
  }
  const RobustStats sources = robust_stats(source_medians);
  const RobustStats destinations = robust_stats(destination_medians);
  for (std::size_t h = 0; h < n; ++h) {
    FlaggedHost host;
    host.host = h;
    host.hosts_source_median = sources.median;
    host.hosts_destination_median = destinations.median;
    if (rows[h].count > 0) host.source_median = rows[h].median;
    if (columns[h].count > 0) host.destination_median = columns[h].median;
    host.as_source = host.source_median && judge.is_outlier(*host.source_median, sources);
    host.as_destination =
        host.destination_median && judge.is_outlier(*host.destination_median, destinations);
    if (!host.as_source && !host.as_destination) continue;
    std::vector<std::string> parts;
    if (host.as_source) {
      parts.push_back("as a source its median " + number(*host.source_median) + " is " +
                      judge.compare(*host.source_median, sources.median, "the hosts'"));
    }
    if (host.as_destination) {
      parts.push_back("as a destination its median " + number(*host.destination_median) + " is " +
                      judge.compare(*host.destination_median, destinations.median, "the hosts'"));
    }
    host.reason =
        parts.front() + (parts.size() > 1 ? "; " + parts.back() : "") + " " + judge.limits();
    report.hosts.push_back(std::move(host));
  }

  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < n; ++c) {
      auto v = value_at(r, c);
      if (!v || !judge.is_outlier(*v, rows[r]) || !judge.is_outlier(*v, columns[c])) continue;
      FlaggedCell cell;
      cell.source = r;
      cell.destination = c;
      cell.value = *v;
      cell.row_median = rows[r].median;
      cell.column_median = columns[c].median;
      cell.reason = number(*v) + " is " + judge.compare(*v, rows[r].median, "its row's") + " and " +
                    judge.compare(*v, columns[c].median, "its column's") + " " + judge.limits();
      report.cells.push_back(std::move(cell));
    }
  }
  return report;
}

} // namespace fabric::probes
