// The RDMA probes' parameters (`fabric-probe bw` and `lat`): what the user typed, checked
// once, with errors that name the flag; and the same parameters as the JSON object that
// travels to the agent in the hello (and in mesh "run" delegation), checked again there
// because it comes from the network.
//
// Pure logic: no verbs headers. The defaults follow perftest's (ib_write_bw: 64 KiB,
// 5000 iterations, TX depth 128; ib_send_lat: 2 bytes, 1000 iterations) so that the two
// tools can be compared with the same command line.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "common/result.h"
#include "libs/agent_channel/auth.h"
#include "probes/agent/agent_access.h"
#include "probes/agent/protocol.h"

namespace fabric::probes {

enum class RdmaTest { kBandwidth, kLatency };
enum class RdmaOp { kWrite, kRead, kSend };

std::string_view rdma_op_name(RdmaOp op);
// "write", "read", "send"; `what` names the flag or field in errors.
Result<RdmaOp> parse_rdma_op(std::string_view text, std::string_view what);
// The agent's test name: "rdma_bw" or "rdma_lat".
std::string_view rdma_test_name(RdmaTest test);

inline constexpr uint64_t kDefaultBwSize = 65536;
inline constexpr uint64_t kDefaultLatSize = 2;
inline constexpr uint64_t kDefaultBwIters = 5000;
inline constexpr uint64_t kDefaultLatIters = 1000;
inline constexpr uint32_t kDefaultTxDepth = 128;
inline constexpr uint32_t kMaxQps = 64;
// ibv_global_route.sgid_index is 8 bits wide.
inline constexpr uint32_t kMaxGidIndex = 255;
inline constexpr uint32_t kMaxTxDepth = 8192;
inline constexpr uint64_t kMaxMessageBytes = 1ull << 30;
// qps x 2 x the largest size: both ends register this much (see rdma_resources.h).
inline constexpr uint64_t kMaxBufferBytes = 4ull << 30;
inline constexpr uint64_t kMaxIters = 1000000000;
// lat keeps every sample (8 bytes each) for its percentiles: 80 MB at most.
inline constexpr uint64_t kMaxLatIters = 10000000;
inline constexpr std::chrono::seconds kMaxDuration{24 * 3600};

struct RdmaOptions {
  RdmaTest test = RdmaTest::kBandwidth;
  std::string host; // the agent's host (client side only; not sent to the agent)
  uint16_t agent_port = kDefaultAgentPort;
  std::optional<Token> token; // answers an agent that asks for one (client side only)
  RdmaOp op = RdmaOp::kWrite;
  std::vector<uint64_t> sizes; // message sizes in bytes, ascending, at least one
  uint32_t qps = 1;
  bool bidir = false;
  uint64_t iters = 0;                               // per queue pair and size; 0 with a duration
  std::optional<std::chrono::nanoseconds> duration; // per size
  uint32_t tx_depth = kDefaultTxDepth;
  bool use_cm = false; // connect through librdmacm instead of the out-of-band exchange
  std::optional<uint32_t> gid_index;
  std::optional<uint32_t> remote_gid_index;
  std::optional<std::string> device;
  std::optional<std::string> remote_device;
  uint32_t ib_port = 1;
  uint8_t traffic_class = 0; // the GRH traffic class: DSCP << 2 | ECN bits
  uint8_t sl = 0;
  std::optional<uint32_t> mtu; // bytes; default: the ports' active MTUs, the smaller one
  std::optional<int> gpu;      // CUDA device for this side's buffers
  bool json = false;
  std::optional<double> min_bw_gbps;
  std::optional<double> min_bw_pct;
  // Bound on every network step: connecting, each message, and a data phase that makes
  // no progress.
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};

  uint64_t max_size() const { return sizes.empty() ? 0 : sizes.back(); }
};

// The command line as typed: every value is text so that errors name the flag the same
// way whatever is wrong with it.
struct RdmaArgs {
  std::string host;
  std::optional<std::string> op;
  std::optional<std::string> size;
  std::optional<std::string> sweep;
  std::optional<std::string> iters;
  std::optional<std::string> duration;
  std::optional<std::string> qps;
  std::optional<std::string> tx_depth;
  std::optional<std::string> gid_index;
  std::optional<std::string> remote_gid_index;
  std::optional<std::string> tclass;
  std::optional<std::string> dscp;
  std::optional<std::string> sl;
  std::optional<std::string> mtu;
  std::optional<std::string> device;
  std::optional<std::string> remote_device;
  std::optional<std::string> ib_port;
  std::optional<std::string> port;
  std::optional<std::string> gpu;
  std::optional<std::string> min_bw;
  std::optional<std::string> min_bw_pct;
  std::optional<std::string> timeout;
  std::optional<std::string> token_file;
  bool bidir = false;
  bool cm = false;
  bool json = false;
};

// Checks every argument and the combinations; errors are kInvalidArgument (exit 1) and
// start with the flag: "--mtu: 1500 is not an RDMA MTU (256, 512, 1024, 2048 or 4096)".
Result<RdmaOptions> make_rdma_options(RdmaTest test, const RdmaArgs& args);

// "MIN:MAX" with both powers of two -> MIN, 2*MIN, ..., MAX. Sizes take K/M/G suffixes.
Result<std::vector<uint64_t>> parse_sweep(std::string_view text, std::string_view what);

// 256, 512, 1024, 2048 or 4096; anything else is an error naming `what`.
Result<uint32_t> parse_rdma_mtu(std::string_view text, std::string_view what);

// The options as the JSON params object of the hello (and of mesh delegation):
// {"op","sizes","qps","bidir","iters"|"duration_s","tx_depth","cm","tclass","sl","mtu",
//  "gid_index","remote_gid_index","device","remote_device","ib_port","gpu",
//  "min_bw_gbps","min_bw_pct","timeout_ms"}. Absent optionals are left out.
std::string rdma_params_json(const RdmaOptions& options);

// Reads params back, checking them as strictly as the command line does (they come from
// the network); errors name the field ("params.sizes[1]: ..."). host and agent_port are
// left at their defaults.
Result<RdmaOptions> rdma_options_from_params(RdmaTest test, const rapidjson::Value& params);

// What a session costs the agent: both halves of every QP's buffer at the largest size
// (registered and pinned), the largest message, and with a duration, its length times the
// number of sizes.
SessionDemand rdma_session_demand(const RdmaOptions& options);
Result<SessionDemand> rdma_bw_demand(const rapidjson::Value& params);
Result<SessionDemand> rdma_lat_demand(const rapidjson::Value& params);

// What the agent side uses of the client's options: its own device and GID index are the
// client's remote_* ones.
struct RdmaServerView {
  std::optional<std::string> device;
  std::optional<uint32_t> gid_index;
};
RdmaServerView server_view(const RdmaOptions& options);

} // namespace fabric::probes
