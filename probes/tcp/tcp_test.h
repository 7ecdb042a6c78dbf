// TCP bandwidth and latency through the agent: the quickest way to tell "the network is
// down" from "RDMA is misconfigured" between the same two hosts.
//
// tcp_bw: after the welcome the agent announces a cookie; the client opens N data
// connections to the agent's own port (an "attach" hello carrying the cookie, then raw
// bytes, as iperf3 does), the agent says "start", the senders write for the duration (or
// the byte count) and half-close, the receivers read to the end. The agent then sends its
// side's counts in the "result". The receiver's count is the truth, as in iperf3: the
// sender's includes what was still in socket buffers when it stopped.
//
// tcp_lat: one data connection with TCP_NODELAY; the client sends `size` bytes, the agent
// echoes them, warmup + iters times; the client times each round trip with
// CLOCK_MONOTONIC_RAW and reports RTT/2.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "common/json.h"
#include "common/result.h"
#include "libs/agent_channel/auth.h"
#include "probes/agent/agent_access.h"
#include "probes/stats.h"
#include "probes/tcp/tcp_stream.h"

namespace fabric::probes {

class Agent;

inline constexpr const char* kTcpBwTest = "tcp_bw";
inline constexpr const char* kTcpLatTest = "tcp_lat";

enum class TcpDirection {
  kForward, // client -> agent
  kReverse, // agent -> client
  kBidir,   // both at once, on the same connections
};
std::string_view tcp_direction_name(TcpDirection direction);

struct TcpBwOptions {
  std::size_t streams = 1;
  std::size_t write_size = 128 * 1024;
  std::chrono::nanoseconds duration{std::chrono::seconds(10)};
  uint64_t bytes = 0; // in total over the streams; 0 = run for `duration`
  TcpDirection direction = TcpDirection::kForward;
  // Bounds the connect, the handshake and every wait for data (a stalled peer).
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

struct TcpLatOptions {
  std::size_t size = 1;
  std::size_t iters = 1000;
  std::size_t warmup = 100;
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

// Checks ranges; errors name the option (--streams, --size, ...).
Result<void> validate(const TcpBwOptions& options);
Result<void> validate(const TcpLatOptions& options);

// The options as the hello's params, and back (the agent's side, and "run" delegation).
std::string to_params_json(const TcpBwOptions& options);
std::string to_params_json(const TcpLatOptions& options);
Result<TcpBwOptions> tcp_bw_options_from_json(const rapidjson::Value& params);
Result<TcpLatOptions> tcp_lat_options_from_json(const rapidjson::Value& params);

struct AgentIdentity {
  std::string endpoint; // "HOST:PORT"
  std::string hostname;
  std::string version;
};

struct TcpBwDirection {
  std::string name; // "client_to_agent" or "agent_to_client"
  TransferTotals sender;
  TransferTotals receiver;
  std::vector<TransferTotals> receiver_streams;
  std::vector<uint64_t> sender_stream_bytes;
};

struct TcpBwReport {
  AgentIdentity agent;
  TcpBwOptions options;
  std::vector<TcpBwDirection> directions;
  // Receiver-side Gb/s, summed over directions (bidir counts both).
  double avg_gbps() const;
  double avg_gbytes_per_s() const;
};

struct TcpLatReport {
  AgentIdentity agent;
  TcpLatOptions options;
  LatencySummary summary; // RTT/2 in microseconds
};

// Bytes this client moved (sent and received, every stream) in one interval of a running
// bandwidth test, as iperf3 prints them every second.
struct TcpInterval {
  double start_s = 0; // since the streams started
  double end_s = 0;
  uint64_t bytes = 0;
  double gbps() const;
};
struct TcpIntervalReporting {
  std::chrono::milliseconds period{std::chrono::seconds(1)};
  std::function<void(const TcpInterval&)> report; // called from another thread
};

// The client sides; `token` answers an agent that asks for one. `intervals`, when it has
// a function, hears of every `period` of the bandwidth test while it runs.
Result<TcpBwReport> run_tcp_bw(const std::string& host, uint16_t port, const TcpBwOptions& options,
                               const Token* token = nullptr,
                               const TcpIntervalReporting& intervals = {});
Result<TcpLatReport> run_tcp_lat(const std::string& host, uint16_t port,
                                 const TcpLatOptions& options, const Token* token = nullptr);

// What a session of each costs the agent (buffers, write size, duration).
Result<SessionDemand> tcp_bw_demand(const rapidjson::Value& params);
Result<SessionDemand> tcp_lat_demand(const rapidjson::Value& params);

// Reports: JSON objects written into `w` (schema_version, test, agent, params, summary),
// whole documents, and text for a terminal.
void write_tcp_bw_json(json::Writer& w, const TcpBwReport& report);
void write_tcp_lat_json(json::Writer& w, const TcpLatReport& report);
std::string render_tcp_bw_json(const TcpBwReport& report, bool pretty = true);
std::string render_tcp_lat_json(const TcpLatReport& report, bool pretty = true);
// `fabric-probe tcp --json`: one report as above, or with both,
// {"schema_version", "test": "tcp", "tcp_bw": {...}, "tcp_lat": {...}}. One must be given.
std::string render_tcp_json(const TcpBwReport* bw, const TcpLatReport* lat);
std::string render_tcp_bw_text(const TcpBwReport& report);
// "[  2.0-  3.0 s]   1.25 GB    9.41 Gb/s"
std::string render_tcp_interval_text(const TcpInterval& interval);
std::string render_tcp_lat_text(const TcpLatReport& report);

// Registers the server sides (tcp_bw, tcp_lat) and their client runners for "run".
void register_tcp_tests(Agent& agent);

} // namespace fabric::probes
