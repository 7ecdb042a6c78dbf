#include "nccltest/summary.h"

#include <cstdlib>
#include <string>

#include "common/error.h"

namespace fabric::nccltest {

double average_busbw(const std::vector<SizeRow>& rows) {
  double sum = 0;
  std::size_t count = 0;
  for (const SizeRow& row : rows) {
    sum += row.out_of_place.busbw + row.in_place.busbw;
    count += 2;
  }
  return count ? sum / static_cast<double>(count) : 0;
}

void apply_threshold(RunFooter& footer, const std::vector<SizeRow>& rows) {
  footer.avg_busbw = average_busbw(rows);
  std::vector<SizeRow> large;
  for (const SizeRow& row : rows) {
    if (row.bytes >= kJudgedFromBytes) large.push_back(row);
  }
  if (footer.threshold.from_nccl_tests_env) {
    // nccl-tests judges NCCL_TESTS_MIN_BW on the average it prints, over every size.
    footer.judged_busbw = footer.avg_busbw;
    footer.judged_on = "every size, as nccl-tests judges NCCL_TESTS_MIN_BW";
  } else if (!large.empty()) {
    footer.judged_busbw = average_busbw(large);
    footer.judged_on = "sizes >= 64 MiB";
  } else {
    footer.judged_busbw = footer.avg_busbw;
    footer.judged_on = "every size (none reached 64 MiB)";
  }
  const Threshold& t = footer.threshold;
  if (!t.min_busbw && !t.min_busbw_pct) {
    footer.threshold_ok.reset();
    return;
  }
  bool ok = true;
  if (t.min_busbw) {
    double floor = *t.min_busbw * (t.from_nccl_tests_env ? 0.9 : 1.0);
    ok = ok && *footer.judged_busbw >= floor;
  }
  if (t.min_busbw_pct) {
    // Without a ceiling there is nothing to take a percentage of: the check cannot pass.
    const auto& ceiling = footer.line_rate.ceiling_gbytes;
    ok = ok && ceiling && *footer.judged_busbw >= *ceiling * *t.min_busbw_pct / 100.0;
  }
  footer.threshold_ok = ok;
}

std::optional<double> nccl_tests_min_bw(const char* value) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(value, &end);
  if (end == value || !(v > 0)) return std::nullopt;
  return v;
}

int run_exit_status(const RunFooter& footer, bool require_rdma, bool socket_fallback) {
  if (footer.out_of_bounds > 0) return kExitBelowThreshold;
  if (footer.threshold_ok && !*footer.threshold_ok) return kExitBelowThreshold;
  if (require_rdma && socket_fallback) return kExitBelowThreshold;
  return kExitOk;
}

} // namespace fabric::nccltest
