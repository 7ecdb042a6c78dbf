#include "exporters/nccl_collector.h"

#include <string>

namespace fabric::exporters {

Result<void> NcclCollector::collect(MetricSink& sink) {
  auto snapshot = reader_.read();
  if (!snapshot.ok()) return std::move(snapshot).error();
  const auto& stats = snapshot->stats;

  auto operations = sink.counter("fabric_nccl_operations_total",
                                 "NCCL operations enqueued by the node's processes");
  auto bytes = sink.counter("fabric_nccl_bytes_total",
                            "Bytes of the NCCL operations enqueued (the operation's message size)");
  auto timed = sink.counter("fabric_nccl_timed_operations_total",
                            "NCCL operations whose GPU time the profiler measured");
  auto busy = sink.counter("fabric_nccl_busy_seconds_total",
                           "GPU time of the timed NCCL operations, from first channel start to "
                           "last channel end, overlapping operations counted once");
  auto busbw = sink.gauge("fabric_nccl_bus_bandwidth_bytes_per_second",
                          "Bus bandwidth of the timed operations over the processes' last flush "
                          "interval (nccl-tests' busbw)");
  auto algbw = sink.gauge("fabric_nccl_algorithm_bandwidth_bytes_per_second",
                          "Algorithm bandwidth (bytes over time) of the timed operations over the "
                          "processes' last flush interval");

  std::size_t left_out = 0;
  auto comm_bytes = sink.counter(
      "fabric_nccl_communicator_timed_bytes_total",
      "Bytes of a communicator's timed NCCL operations, every collective and size, summed over "
      "its ranks in the node's processes");
  auto comm_busy = sink.counter(
      "fabric_nccl_communicator_busy_seconds_total",
      "GPU time a communicator spent in NCCL: the union of the intervals of all its timed "
      "operations, every collective and size, grouped and overlapping ones counted once; "
      "summed over its ranks in the node's processes");
  auto comm_algbw = sink.gauge(
      "fabric_nccl_communicator_algorithm_bandwidth_bytes_per_second",
      "A communicator's timed bytes over its GPU time in NCCL, over the processes' last flush "
      "interval");
  // A communicator's own series first, as the reader serves them: one per communicator,
  // the whole of its time, where its cells are up to one per collective and size.
  for (const auto& communicator : snapshot->communicators) {
    if (sink.room() < kNcclSamplesPerCommunicator) {
      ++left_out;
      continue;
    }
    const auto& l = communicator.labels;
    const auto& v = communicator.values;
    Labels labels = {{"comm", l.comm},
                     {"nranks", std::to_string(l.nranks)},
                     {"namespace", l.pod_namespace},
                     {"pod", l.pod_name}};
    comm_bytes.add(labels, static_cast<double>(v.timed_bytes));
    comm_busy.add(labels, static_cast<double>(v.busy_ns) / 1e9);
    if (v.algbw) comm_algbw.add(labels, *v.algbw);
  }

  for (const auto& series : snapshot->series) {
    // Operations and bytes of one series are served together or not at all.
    if (sink.room() < kNcclSamplesPerSeries) {
      ++left_out;
      continue;
    }
    const auto& l = series.labels;
    const auto& v = series.values;
    Labels labels = {
        {"collective", l.collective},         {"comm", l.comm},
        {"nranks", std::to_string(l.nranks)}, {"size_bucket", std::to_string(l.size_bytes)},
        {"namespace", l.pod_namespace},       {"pod", l.pod_name}};
    operations.add(labels, static_cast<double>(v.operations));
    bytes.add(labels, static_cast<double>(v.bytes));
    timed.add(labels, static_cast<double>(v.timed_operations));
    busy.add(labels, static_cast<double>(v.busy_ns) / 1e9);
    if (v.busbw) busbw.add(labels, *v.busbw);
    if (v.algbw) algbw.add(labels, *v.algbw);
  }

  sink.count_dropped(left_out + stats.series_dropped);

  auto processes =
      sink.gauge("fabric_nccl_processes", "Processes whose NCCL profiler file is served, by state");
  processes.add({{"state", "running"}}, static_cast<double>(stats.processes_alive));
  processes.add({{"state", "exited"}}, static_cast<double>(stats.processes_exited));
  auto rejected = sink.counter("fabric_nccl_files_rejected_total",
                               "Profiler file contents not used since the exporter started, by "
                               "reason");
  for (std::size_t i = 0; i < nccl_profiler::kRefusalCount; ++i) {
    rejected.add({{"reason", std::string(nccl_profiler::refusal_name(
                                 static_cast<nccl_profiler::Refusal>(i)))}},
                 static_cast<double>(stats.refused[i]));
  }
  sink.counter("fabric_nccl_files_removed_total",
               "Profiler files of exited processes, and temporaries of writers killed "
               "mid-write, removed since the exporter started")
      .add({}, static_cast<double>(stats.files_removed_total));
  sink.gauge("fabric_nccl_profiler_events_dropped",
             "Events the served processes' profilers could not track (no free slot), summed")
      .add({}, static_cast<double>(stats.events_dropped));
  return Ok();
}

} // namespace fabric::exporters
