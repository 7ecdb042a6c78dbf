#include "nccltest/memory_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace fabric::nccltest {

std::int64_t largest_drop(const std::vector<std::int64_t>& before,
                          const std::vector<std::int64_t>& after) {
  const std::size_t n = std::min(before.size(), after.size());
  if (n == 0) return 0;
  std::int64_t largest = before[0] - after[0];
  for (std::size_t i = 1; i < n; ++i)
    largest = std::max(largest, before[i] - after[i]);
  return largest;
}

GpuMemoryUsage largest_usage(const std::vector<GpuMemoryUsage>& usages) {
  if (usages.empty()) return {};
  GpuMemoryUsage out = usages.front();
  for (const GpuMemoryUsage& u : usages) {
    out.initialization = std::max(out.initialization, u.initialization);
    out.user_allocated = std::max(out.user_allocated, u.user_allocated);
    out.collective = std::max(out.collective, u.collective);
  }
  return out;
}

std::string encode_usage(const GpuMemoryUsage& u) {
  return std::to_string(u.initialization) + " " + std::to_string(u.user_allocated) + " " +
         std::to_string(u.collective);
}

std::optional<GpuMemoryUsage> decode_usage(const std::string& text) {
  std::istringstream in(text);
  GpuMemoryUsage u;
  if (!(in >> u.initialization >> u.user_allocated >> u.collective)) return std::nullopt;
  std::string rest;
  if (in >> rest) return std::nullopt;
  return u;
}

std::string memory_amount(std::int64_t bytes) {
  double amount = static_cast<double>(bytes);
  const char* unit = " B";
  constexpr double kKiB = 1024.0;
  if (std::fabs(amount) >= kKiB * kKiB * kKiB) {
    unit = " GB";
    amount /= kKiB * kKiB * kKiB;
  } else if (std::fabs(amount) >= kKiB * kKiB) {
    unit = " MB";
    amount /= kKiB * kKiB;
  } else if (std::fabs(amount) >= kKiB) {
    unit = " KB";
    amount /= kKiB;
  }
  const int precision = std::fabs(amount) < 10.0 ? 2 : std::fabs(amount) < 100.0 ? 1 : 0;
  char text[64];
  std::snprintf(text, sizeof text, "%.*f%s", precision, amount, unit);
  return text;
}

std::string render_memory_usage(const GpuMemoryUsage& u) {
  const std::string figures = "Initialization " + memory_amount(u.initialization) +
                              " | User-Allocated " + memory_amount(u.user_allocated) +
                              " | Collective " + memory_amount(u.collective) + " | Total  " +
                              memory_amount(u.initialization + u.user_allocated + u.collective);
  char line[512];
  std::snprintf(line, sizeof line, "# %-20s : %s\n", "GPU memory usage", figures.c_str());
  return line;
}

} // namespace fabric::nccltest
