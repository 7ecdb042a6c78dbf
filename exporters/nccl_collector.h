// Live NCCL throughput of the node's training jobs: the files that libnccl-profiler-fabric.so
// writes in every process that uses NCCL (exporters/nccl_profiler/README.md), read by the
// plugin's own reader and served as fabric_nccl_* families. A series is a collective, a
// communicator, its rank count, a message-size bucket and the pod; counters never go
// backwards while a process lives, and an exited process's last values age out. A
// communicator's own series (fabric_nccl_communicator_*) count its GPU time once across all
// its collectives.
#pragma once

#include <string>

#include "exporters/collector.h"
#include "exporters/nccl_profiler/profile_reader.h"

namespace fabric::exporters {

class NcclCollector : public Collector {
public:
  explicit NcclCollector(nccl_profiler::ReaderOptions options) : reader_(std::move(options)) {}

  std::string name() const override { return "nccl"; }
  Result<void> collect(MetricSink& sink) override;

private:
  nccl_profiler::ProfileReader reader_;
};

// The samples one series of the reader becomes (operations, bytes, timed operations, busy
// seconds, and the two bandwidths when known): a series is served whole or not at all.
inline constexpr std::size_t kNcclSamplesPerSeries = 6;
// And one communicator's (timed bytes, busy seconds, and its bandwidth when known).
inline constexpr std::size_t kNcclSamplesPerCommunicator = 3;

} // namespace fabric::exporters
