// The run for Prometheus, in the text exposition format that node_exporter's textfile
// collector and fabric-exporter read. Base units (bytes per second, seconds), a bounded
// label set: collective, backend, nranks, size_bucket (the size rounded down to a power of
// two; rows sharing a bucket are averaged) and placement (out_of_place, in_place).
#include <cmath>
#include <cstdio>
#include <map>

#include "nccltest/outputs.h"

namespace fabric::nccltest {
namespace {

std::string value_text(double v) {
  if (std::isnan(v)) return "NaN";
  char text[40];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::size_t size_bucket(std::size_t bytes) {
  if (bytes == 0) return 0;
  std::size_t b = 1;
  while (b <= bytes / 2)
    b *= 2;
  return b;
}

struct Bucket {
  double busbw = 0, algbw = 0, seconds = 0, wrong = 0;
  int rows = 0;
  bool checked = false;
};

class Family {
public:
  Family(std::string& out, const char* name, const char* help) : out_(out), name_(name) {
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n";
  }
  void sample(const std::string& labels, double v) {
    out_ += name_ + "{" + labels + "} " + value_text(v) + "\n";
  }

private:
  std::string& out_;
  std::string name_;
};

} // namespace

std::string render_prom_report(const RunRecord& r, double timestamp_s) {
  const std::string run_labels = "collective=\"" + r.collective + "\",backend=\"" +
                                 r.header.backend + "\",nranks=\"" +
                                 std::to_string(r.header.ranks.size()) + "\"";
  std::map<std::pair<std::size_t, int>, Bucket> buckets; // (bucket, in_place)
  for (const SizeRow& row : r.rows) {
    for (int in_place : {0, 1}) {
      const PlacementResult& p = in_place ? row.in_place : row.out_of_place;
      Bucket& b = buckets[{size_bucket(row.bytes), in_place}];
      b.busbw += p.busbw * 1e9;
      b.algbw += p.algbw * 1e9;
      b.seconds += p.time_us * 1e-6;
      if (p.wrong) {
        b.checked = true;
        b.wrong += static_cast<double>(*p.wrong);
      }
      ++b.rows;
    }
  }
  auto labels = [&](const std::pair<std::size_t, int>& key) {
    return run_labels + ",size_bucket=\"" + std::to_string(key.first) + "\",placement=\"" +
           (key.second ? "in_place" : "out_of_place") + "\"";
  };
  std::string out;
  {
    Family f(out, "fabric_nccltest_bus_bandwidth_bytes_per_second",
             "Bus bandwidth (nccl-tests' busbw) of the last fabric-nccltest run.");
    for (const auto& [key, b] : buckets)
      f.sample(labels(key), b.busbw / b.rows);
  }
  {
    Family f(out, "fabric_nccltest_algorithm_bandwidth_bytes_per_second",
             "Algorithm bandwidth (nccl-tests' algbw) of the last fabric-nccltest run.");
    for (const auto& [key, b] : buckets)
      f.sample(labels(key), b.algbw / b.rows);
  }
  {
    Family f(out, "fabric_nccltest_operation_duration_seconds",
             "Time per collective operation in the last fabric-nccltest run.");
    for (const auto& [key, b] : buckets)
      f.sample(labels(key), b.seconds / b.rows);
  }
  {
    Family f(out, "fabric_nccltest_wrong_elements",
             "Elements that held a wrong value after the collective, summed over ranks.");
    for (const auto& [key, b] : buckets) {
      if (b.checked) f.sample(labels(key), b.wrong);
    }
  }
  {
    Family f(out, "fabric_nccltest_average_bus_bandwidth_bytes_per_second",
             "nccl-tests' average bus bandwidth over every size of the last run.");
    f.sample(run_labels, r.footer.avg_busbw * 1e9);
  }
  if (r.footer.line_rate.ceiling_gbytes) {
    Family f(out, "fabric_nccltest_line_rate_ceiling_bytes_per_second",
             "The bus bandwidth the slowest node's NICs allow.");
    f.sample(run_labels, *r.footer.line_rate.ceiling_gbytes * 1e9);
  }
  {
    Family f(out, "fabric_nccltest_success",
             "1 when the last run's checks and thresholds passed, else 0.");
    bool ok = r.footer.out_of_bounds == 0 && r.footer.threshold_ok.value_or(true) && !r.hang;
    f.sample(run_labels, ok ? 1 : 0);
  }
  {
    Family f(out, "fabric_nccltest_last_run_timestamp_seconds",
             "When the last fabric-nccltest run ended, in seconds since the epoch.");
    f.sample(run_labels, timestamp_s);
  }
  return out;
}

} // namespace fabric::nccltest
