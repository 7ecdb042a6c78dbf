// What `fabric-probe bw` and `lat` report, and its rendering: text for a terminal (a
// perftest-like table plus the connection and counter deltas) and JSON (`--json`).
//
// JSON (schema_version 1; units in the names):
//   {"schema_version":1, "test":"rdma_bw"|"rdma_lat",
//    "agent":"HOST:PORT", "agent_hostname", "agent_version",
//    "params":{"op","qps","bidir","iters"|"duration_s","tx_depth","sizes","connection"},
//    "connection":{"method":"oob"|"rdma_cm","mtu_bytes","traffic_class","sl",
//                  "max_inline_bytes","local":{SIDE},"remote":{SIDE}},
//       SIDE = {"device","port","gid_index","gid","gid_type","netdev","ipv4",
//               "gid_reason","active_mtu_bytes","memory":"host"|"gpu","gpu_registration"}
//    bw:  "link_speed_gbps", "results":[{"size_bytes","iterations","messages","bytes",
//           "seconds","avg_gbps","avg_gbytes_per_s","peak_gbps","peak_gbytes_per_s",
//           "msg_rate_mpps", and with bidir "local_avg_gbps","remote_avg_gbps"}],
//         "threshold":{"min_gbps","min_pct","required_gbps","passed"} (with --min-bw*),
//         "summary":{"size_bytes","avg_gbps","avg_gbytes_per_s","peak_gbps",
//                    "msg_rate_mpps"}: the largest size's figures
//    lat: "latency":"rtt/2"|"rtt", "results":[{"size_bytes","iterations","count","min_us",
//           "p50_us","p99_us","p999_us","max_us","mean_us","stdev_us"}],
//         "summary":{the smallest size's fields, with "size_bytes"}
//    "counters":{"local":{COUNTERS},"remote":{COUNTERS}} (counters.h's object; null when
//         a side could not read them)}
//
// Bidirectional bandwidth, as perftest reports it: the sum of both directions, each
// measured by its sender.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "common/json.h"
#include "common/result.h"
#include "probes/devices/counters.h"
#include "probes/devices/gid_choice.h"
#include "probes/rdma/rdma_exchange.h"
#include "probes/rdma/rdma_options.h"
#include "probes/stats.h"

namespace fabric::probes {

struct RdmaAgentInfo {
  std::string endpoint; // "HOST:PORT"
  std::string hostname;
  std::string version;
};

struct RdmaSideInfo {
  GidChoice gid; // device, port, GID index, GID, type, netdev, address, reason
  uint32_t active_mtu = 0;
  bool gpu_memory = false;
  std::string gpu_registration; // "dma-buf", "nvidia-peermem" or ""
};

struct RdmaConnectionInfo {
  std::string method = "oob"; // "oob" (QP numbers over the agent channel) or "rdma_cm"
  uint32_t mtu = 0;           // path MTU in bytes
  uint8_t traffic_class = 0;
  uint8_t sl = 0;
  uint32_t max_inline = 0;
  RdmaSideInfo local;
  RdmaSideInfo remote;
};

struct BwSizeResult {
  uint64_t size = 0;
  uint64_t iterations = 0;         // per QP, as perftest's #iterations
  SideStats local;                 // this side's sending
  std::optional<SideStats> remote; // the agent's sending (bidirectional)

  uint64_t messages() const;
  uint64_t bytes() const;
  double seconds() const;
  double avg_bytes_per_s() const; // summed over directions
  double peak_bytes_per_s() const;
  double msg_rate_mpps() const;
};

struct LatSizeResult {
  uint64_t size = 0;
  uint64_t iterations = 0;
  LatencySummary summary; // microseconds
};

struct RdmaCounters {
  std::optional<CounterDelta> local;
  std::optional<CounterDelta> remote;
};

struct BwThreshold {
  std::optional<double> min_gbps;
  std::optional<double> min_pct;
  double required_gbps = 0;
  bool passed = true;
};

struct RdmaBwReport {
  RdmaAgentInfo agent;
  RdmaOptions options;
  RdmaConnectionInfo connection;
  std::vector<BwSizeResult> results;
  RdmaCounters counters;
  std::optional<double> link_speed_gbps;
  std::optional<BwThreshold> threshold;
};

struct RdmaLatReport {
  RdmaAgentInfo agent;
  RdmaOptions options;
  RdmaConnectionInfo connection;
  std::vector<LatSizeResult> results;
  RdmaCounters counters;
};

// "rtt/2" for send and write, "rtt" for read (the whole read, as perftest reports it).
std::string_view latency_kind(RdmaOp op);

// Evaluates --min-bw / --min-bw-pct against the largest size's average. nullopt without a
// threshold; a kUnsupported error when --min-bw-pct is given and the link speed is unknown.
Result<std::optional<BwThreshold>> evaluate_threshold(const RdmaOptions& options,
                                                      const std::vector<BwSizeResult>& results,
                                                      std::optional<double> link_speed_gbps);
// The error (kBelowThreshold, exit 3) for a threshold that was missed.
Error below_threshold_error(const BwThreshold& threshold, double measured_gbps);
// `fabric-probe bw`'s verdict: that error when the report's threshold was missed, else Ok.
Result<void> rdma_bw_verdict(const RdmaBwReport& report);

void write_rdma_bw_json(json::Writer& w, const RdmaBwReport& report);
void write_rdma_lat_json(json::Writer& w, const RdmaLatReport& report);
std::string render_rdma_bw_json(const RdmaBwReport& report, bool pretty = true);
std::string render_rdma_lat_json(const RdmaLatReport& report, bool pretty = true);
std::string render_rdma_bw_text(const RdmaBwReport& report);
std::string render_rdma_lat_text(const RdmaLatReport& report);

// Reads write_counters_json()'s object back (the agent's deltas arrive that way).
Result<CounterDelta> parse_counters_json(const rapidjson::Value& value, std::string_view path);

} // namespace fabric::probes
