// nccl-tests' bus bandwidth: busbw = algbw x a factor that depends on how the collective
// moves data among n ranks (nccl-tests' doc/PERFORMANCE.md), so that the figure compares
// with the hardware's link speed whatever the collective. fabric-nccltest prints it and
// the NCCL profiler plugin and its reader export it; both name their collectives in their
// own enums and map them here, so that the factors live in one place.
//
// Header-only with no dependency: the profiler plugin is loaded into training processes
// and links nothing of the project's libraries.
#pragma once

namespace fabric {

enum class BusPattern {
  kAllReduce,     // every byte is reduced and spread: 2(n-1)/n
  kOneShareEach,  // all_gather, reduce_scatter, alltoall: each rank's share, (n-1)/n
  kRootOrPeer,    // broadcast, reduce, send/recv: the whole message crosses once, 1
};

// 0 for a single rank of an all-reduce or gather (nothing crosses a link); nranks < 1 is
// the caller's to refuse.
constexpr double bus_factor(BusPattern pattern, int nranks) {
  const double n = nranks;
  switch (pattern) {
  case BusPattern::kAllReduce: return 2.0 * (n - 1) / n;
  case BusPattern::kOneShareEach: return (n - 1) / n;
  case BusPattern::kRootOrPeer: return 1.0;
  }
  return 1.0;
}

} // namespace fabric
