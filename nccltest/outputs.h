// The files a run writes besides its stdout: nccl-tests' JSON (with a "fabric" object),
// Prometheus text, and SVG plots. All are rendered from one RunRecord, on rank 0.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nccltest/nccl_log.h"
#include "nccltest/pairs.h"
#include "nccltest/report.h"
#include "nccltest/watchdog.h"

namespace fabric::nccltest {

// Everything the reports know about a run.
struct RunRecord {
  RunHeader header;
  std::string collective; // "all_reduce"
  std::vector<SizeRow> rows;
  RunFooter footer;
  std::vector<std::string> args;
  std::vector<std::string> env; // filtered
  std::string start_time, end_time;
  std::optional<std::vector<TransportReport>> transport; // nccl backend, by rank
  std::optional<HangReport> hang;
  std::optional<PairsReport> pairs;
  std::string fault; // the fault injection in force, "" for none
};

// "2025-01-31 12:00:00", local time, as nccl-tests stamps its JSON.
std::string now_text();

// nccl-tests' JSON file layout, version 3: version, start_time, args, env, nccl_version,
// config (with devices), results, out_of_bounds, average_bus_bandwidth, errors, then a
// "fabric" object (schema_version, per-rank results and checks, line rate, transport,
// watchdog, pairs) and end_time.
std::string render_json_report(const RunRecord& record);

// The run in Prometheus text exposition format (see prom_report.cpp for the series).
std::string render_prom_report(const RunRecord& record, double timestamp_s);

// busbw against message size, log-2 axis, out-of-place and in-place, with the line-rate
// ceiling drawn when known; a standalone SVG.
std::string render_busbw_plot(const RunRecord& record);

} // namespace fabric::nccltest
