#include "nccltest/fault.h"

#include <charconv>
#include <thread>

#include "common/units.h"
#include "nccltest/abort_request.h"

namespace fabric::nccltest {
namespace {

Error bad(std::string_view item, const std::string& why) {
  return Error(ErrorCode::kInvalidEnvironment, kFaultEnv,
               "'" + std::string(item) + "': " + why +
                   " (corrupt=R, stall=R[@SIZE], slow-pair=A-B, slow-node=N, comma-separated)");
}

Result<int> index(std::string_view text, std::string_view item) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0 || v > 65535) {
    return bad(item, "'" + std::string(text) + "' is not a rank or node index");
  }
  return v;
}

} // namespace

Result<FaultPlan> parse_fault_plan(std::string_view text) {
  FaultPlan plan;
  plan.text = std::string(text);
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string_view::npos) return bad(item, "no '='");
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "corrupt") {
      FABRIC_ASSIGN_OR_RETURN(int r, index(value, item));
      plan.corrupt_rank = r;
    } else if (key == "stall") {
      auto at = value.find('@');
      FABRIC_ASSIGN_OR_RETURN(int r, index(value.substr(0, at), item));
      plan.stall_rank = r;
      if (at != std::string_view::npos) {
        FABRIC_ASSIGN_OR_RETURN(uint64_t bytes, units::parse_size(value.substr(at + 1), kFaultEnv));
        plan.stall_from_bytes = bytes;
      }
    } else if (key == "slow-pair") {
      auto dash = value.find('-');
      if (dash == std::string_view::npos) return bad(item, "expected A-B");
      FABRIC_ASSIGN_OR_RETURN(int a, index(value.substr(0, dash), item));
      FABRIC_ASSIGN_OR_RETURN(int b, index(value.substr(dash + 1), item));
      if (a == b) return bad(item, "a pair needs two different nodes");
      plan.slow_pair = std::make_pair(std::min(a, b), std::max(a, b));
    } else if (key == "slow-node") {
      FABRIC_ASSIGN_OR_RETURN(int n, index(value, item));
      plan.slow_node = n;
    } else {
      return bad(item, "unknown fault '" + std::string(key) + "'");
    }
  }
  return plan;
}

void stall_for_test(const AbortRequest* abort, std::chrono::seconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until && (abort == nullptr || !abort->requested())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

} // namespace fabric::nccltest
