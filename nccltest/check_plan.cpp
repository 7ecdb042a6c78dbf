#include "nccltest/check_plan.h"

#include <algorithm>

namespace fabric::nccltest {

std::vector<CheckLaunch> plan_check_launches(uint64_t elements) {
  std::vector<CheckLaunch> plan;
  for (uint64_t first = 0; first < elements; first += kDeviceLaunchElements) {
    CheckLaunch launch;
    launch.first = first;
    launch.count = std::min(kDeviceLaunchElements, elements - first);
    const uint64_t blocks = (launch.count + kCheckThreads - 1) / kCheckThreads;
    launch.blocks = static_cast<unsigned>(std::min<uint64_t>(blocks, kMaxCheckBlocks));
    plan.push_back(launch);
  }
  return plan;
}

} // namespace fabric::nccltest
