// The messages of the RDMA tests after the agent's welcome, and their JSON codec.
//
//   client -> agent  {"type":"rdma_endpoint","endpoint":{...}}   the client's QPs and GID
//   agent -> client  {"type":"rdma_endpoint","endpoint":{...}}   the agent's, QPs at RTS
//   then, per message size:
//   client -> agent  {"type":"rdma_run","size":N,"iters":M}      (or "duration_s")
//   agent -> client  {"type":"rdma_ready"}                       receives posted
//   agent -> client  {"type":"rdma_done","stats":{...}}          its half of the run
//   and at the end:
//   client -> agent  {"type":"rdma_finish"}
//   agent -> client  {"type":"result","counters":{...}}          its counter deltas
//
// With --cm the endpoint messages carry no QP numbers (librdmacm connects the QPs) but
// still the buffers' addresses and keys; the agent adds "cm_port", where it listens.
//
// Pure logic: the codec is unit-tested without RDMA hardware.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "common/result.h"
#include "probes/devices/gid_choice.h"

namespace fabric::probes {

inline constexpr const char* kMsgEndpoint = "rdma_endpoint";
inline constexpr const char* kMsgRun = "rdma_run";
inline constexpr const char* kMsgReady = "rdma_ready";
inline constexpr const char* kMsgDone = "rdma_done";
inline constexpr const char* kMsgFinish = "rdma_finish";
inline constexpr const char* kMsgResult = "result";

// One queue pair as its peer needs to know it: where to send (QP number, first PSN) and
// where to write or read (the remote-access half of its buffer).
struct QpInfo {
  uint32_t qpn = 0; // 24 bits
  uint32_t psn = 0; // 24 bits
  uint64_t addr = 0;
};

struct RdmaEndpoint {
  GidChoice gid;              // device, port, GID index and why
  uint32_t lid = 0;           // 0 on RoCE
  uint32_t active_mtu = 0;    // the port's active MTU, bytes
  uint32_t mtu = 0;           // the MTU this side asks for (--mtu), 0 = the port's
  uint32_t max_rd_atomic = 0; // reads this side lets the peer have in flight
  uint32_t rkey = 0;
  uint64_t region_bytes = 0; // remote-accessible bytes at each QP's addr
  uint32_t max_inline = 0;
  bool gpu_memory = false;
  uint16_t cm_port = 0; // the agent's librdmacm listening port (--cm only)
  std::vector<QpInfo> qps;
};

std::string encode_endpoint(const RdmaEndpoint& endpoint);
// Parses {"type":"rdma_endpoint","endpoint":{...}}; errors name the field
// ("endpoint.qps[0].qpn: ..."). `expect_qps` is the number of QPs the test uses.
Result<RdmaEndpoint> decode_endpoint(const rapidjson::Value& message, std::size_t expect_qps);

struct RunRequest {
  uint64_t size = 0;
  uint64_t iters = 0;    // per QP; 0 with a duration
  double duration_s = 0; // per size; 0 with iters
};
std::string encode_run(const RunRequest& run);
Result<RunRequest> decode_run(const rapidjson::Value& message);

// What one side measured of its own sending in a run (bidirectional bw: the agent's
// direction), or for the latency tests nothing but the count of messages it answered.
struct SideStats {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double peak_bytes_per_s = 0;
};
std::string encode_done(const SideStats& stats);
Result<SideStats> decode_done(const rapidjson::Value& message);

std::string encode_simple(const char* type);

// The final message of the agent: its counter deltas (a JSON object, as counters.h writes
// it; "{}" when the device has none) and the host name it ran on.
std::string encode_result(const std::string& counters_json);

// Whether `mtu` bytes is one of the five IBTA MTUs.
bool is_rdma_mtu(uint64_t mtu);
// The MTU both sides use: the smaller --mtu when one was given, else the smaller of both
// ports' active MTUs.
uint32_t agreed_mtu(const RdmaEndpoint& local, const RdmaEndpoint& remote);

} // namespace fabric::probes
