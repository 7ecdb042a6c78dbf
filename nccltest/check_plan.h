// How the device checks cover a buffer: launches of at most kDeviceLaunchElements
// elements each (between two launches the engine waits, so an abort is heard and the
// watchdog beats), each a grid of kCheckThreads-thread blocks walking its elements with a
// grid-stride loop. Pure arithmetic, so that the unit tier checks it without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fabric::nccltest {

inline constexpr uint64_t kDeviceLaunchElements = uint64_t{1} << 28; // 1 GiB of floats
inline constexpr unsigned kCheckThreads = 256;
// Enough blocks to fill the largest GPUs several times over; each thread then walks
// count / (blocks * threads) elements.
inline constexpr unsigned kMaxCheckBlocks = 4096;

struct CheckLaunch {
  uint64_t first = 0; // the launch's first element
  uint64_t count = 0;
  unsigned blocks = 0;
  unsigned threads = kCheckThreads;
};

std::vector<CheckLaunch> plan_check_launches(uint64_t elements);

// The kernels' fatbin (sm_80, sm_90 and compute_90 PTX for newer GPUs), embedded at build
// time; empty when the build had no nvcc.
std::span<const unsigned char> check_kernels_image();

} // namespace fabric::nccltest
