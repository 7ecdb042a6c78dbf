// What a run found, as the renderers (text, JSON, Prometheus, SVG) see it: plain data,
// filled by the runner on rank 0 and by tests directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nccltest/collectives.h"
#include "nccltest/memory_report.h"

namespace fabric::nccltest {

// nccl-tests' version, which the text and JSON layouts follow.
inline constexpr const char* kNcclTestsVersion = "2.19.6";
inline constexpr int kNcclTestsJsonVersion = 3;

// The NIC that carries a rank's inter-node traffic and the speed that bounds it.
struct NicInfo {
  std::string name;   // "mlx5_0/1" (RDMA device/port) or "eth0" (netdev)
  std::string source; // "RDMA port rate" or "netdev speed"
  double gbps = 0;    // line rate, Gb/s (1e9 bit/s)
};

struct RankInfo {
  int rank = 0;
  int group = 0; // nccl-tests' communicator split colour; always 0 here
  int pid = 0;
  std::string host;        // short host name
  int local_rank = 0;      // index among the ranks on the same host
  int device = -1;         // CUDA device index; -1 for host memory (mpi backend)
  std::string pci_bus_id;  // "0000:07:00" for a GPU, "host" for host memory
  std::string device_name; // "NVIDIA H100 80GB HBM3", "host memory"
  std::optional<NicInfo> nic;
  // GPU-NIC placement (PCIe distance), filled in when a topology source is available.
  std::optional<std::string> topology;
};

// nccl-tests' per-iteration summary (-I 1), in microseconds except cv_pct.
struct IterationStats {
  double min = 0, max = 0, avg = 0, p50 = 0, p95 = 0, p99 = 0, stdev = 0;
  double cv_pct = 0; // stdev / avg * 100; 0 when avg is 0
};

// -I 1: one placement's iterations, each the slowest process's time per operation.
struct PerIteration {
  int skipped = 0;              // -K: leading iterations left out of `stats`
  IterationStats stats;         // over the iterations after the skipped ones
  std::vector<double> times_us; // every iteration, skipped ones included
  // Each process's own times (nccl-tests' per_process_max_times_us), with more than one
  // process and within kMaxPerProcessSamples; else empty.
  std::vector<std::vector<double>> per_process_us;
};

// One timed placement (out-of-place or in-place) of one size.
struct PlacementResult {
  double time_us = 0;               // per operation, aggregated over ranks as -a says
  double algbw = 0;                 // GB/s
  double busbw = 0;                 // GB/s
  std::optional<int64_t> wrong;     // wrong elements summed over ranks; nullopt: not checked (N/A)
  std::vector<double> rank_time_us; // each rank's own time, by rank
};

struct SizeRow {
  std::size_t bytes = 0; // the size column: max(send, receive) bytes
  std::size_t count = 0; // elements per call
  DataType type = DataType::kFloat;
  std::string op; // "sum", ..., "none"
  int root = -1;
  PlacementResult out_of_place;
  PlacementResult in_place;
  std::string timestamp; // -S: when the row completed, "2025-01-31 12:00:00"; else empty
  // -I 1: each placement's iterations.
  std::optional<PerIteration> out_of_place_iterations, in_place_iterations;
};

// A rank whose result was wrong, for the per-rank report.
struct RankCheckFailure {
  int rank = 0;
  std::string host;
  int device = -1;
  std::size_t bytes = 0; // the size row
  DataType type = DataType::kFloat;
  std::string op;
  bool in_place = false;
  std::size_t wrong = 0;
  std::size_t checked = 0;
  std::size_t first_index = 0;
  double first_got = 0;
  double first_expected = 0;
};

// The ceiling that the NICs put on bus bandwidth for this run's placement of ranks.
struct LineRate {
  std::optional<double> ceiling_gbytes; // GB/s per rank; nullopt: no inter-node traffic
                                        // or no NIC speed known
  std::string basis;                    // how it was derived, or why there is none
};

struct Threshold {
  std::optional<double> min_busbw;     // GB/s
  std::optional<double> min_busbw_pct; // of the line-rate ceiling
  bool from_nccl_tests_env = false;    // NCCL_TESTS_MIN_BW (judged with its 10% slack)
};

// nccl-tests' parameter line and fabric-nccltest's own header facts.
struct RunHeader {
  std::string program;  // "all_reduce_perf"
  int nccl_headers = 0; // NCCL_VERSION_CODE built against; 0 without NCCL
  int nccl_library = 0; // ncclGetVersion(); 0 when NCCL is not in use
  std::size_t min_bytes = 0, max_bytes = 0, step_bytes = 0, step_factor = 1;
  int warmup_iters = 0, iters = 0, agg_iters = 1, check_iters = 0, graph_launches = 0;
  int blocking = 0;
  int nthreads = 1, ngpus = 1; // per process, as they ran (-t, -g)
  int unalign = 0;
  bool report_cputime = false;    // -C: the time columns are "cputime"
  bool report_timestamps = false; // -S: a "timestamp" column ends each row
  bool parallel_init = false;
  bool per_iteration = false; // -I 1: four more columns per placement
  int per_iteration_skip = 0; // -K
  std::string backend;        // "mpi" or "nccl"
  std::string backend_reason; // "chosen with --backend", "no CUDA device: ..."
  std::string launcher;       // "mpirun", "rendezvous", "single process"
  int nodes = 1;
  double timeout_s = 0;           // 0: no watchdog
  std::vector<std::string> notes; // extra '#' lines (rounding, fault injection, ...)
  std::vector<RankInfo> ranks;
  std::optional<std::string> json_path; // "# Writing JSON output to ..."
  bool table = true;                    // false for --pairs, which prints no size table
};

struct RunFooter {
  int64_t out_of_bounds = 0; // (rank, size, placement) checks with a wrong element
  double avg_busbw = 0;      // over every out-of-place and in-place row
  LineRate line_rate;
  Threshold threshold;
  // The average the threshold is judged on: sizes of 64 MiB and more when the run has
  // them, else every size (said in `judged_on`).
  std::optional<double> judged_busbw;
  std::string judged_on;
  std::optional<bool> threshold_ok; // nullopt: no threshold set
  std::vector<RankCheckFailure> failures;
  // -M 1: the largest figures over every GPU of the run, after "Collective test concluded".
  std::optional<GpuMemoryUsage> gpu_memory;
};

} // namespace fabric::nccltest
