// libFuzzer target for what a stranger on the agent's port controls: the byte stream, cut
// into frames by the agent's FrameReader (in whatever chunks the input's first byte
// decides), and each frame parsed as the agent and the clients parse them: the hello and
// the test parameters inside it (the RDMA and TCP tests' option parsers and the limits'
// demands), the challenge, the proof and the welcome. Anything but a clean error is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/json.h"
#include "libs/agent_channel/framing.h"
#include "probes/agent/protocol.h"
#include "probes/rdma/rdma_options.h"
#include "probes/tcp/tcp_test.h"

namespace {

using namespace fabric;
using namespace fabric::probes;

void parse_params(std::string_view test, const rapidjson::Value& params) {
  if (test == "rdma_bw") {
    (void)rdma_bw_demand(params);
    (void)rdma_options_from_params(RdmaTest::kBandwidth, params);
  } else if (test == "rdma_lat") {
    (void)rdma_lat_demand(params);
    (void)rdma_options_from_params(RdmaTest::kLatency, params);
  } else if (test == "tcp_bw") {
    (void)tcp_bw_demand(params);
    (void)tcp_bw_options_from_json(params);
  } else if (test == "tcp_lat") {
    (void)tcp_lat_demand(params);
    (void)tcp_lat_options_from_json(params);
  }
}

void parse_frame(const std::string& text) {
  auto doc = json::parse(text, "fuzzed frame");
  if (!doc.ok()) return;
  if (auto hello = parse_hello(*doc); hello.ok()) {
    auto params = json::parse(hello->params_json, "fuzzed params");
    if (params.ok()) parse_params(hello->test, *params);
  }
  (void)parse_challenge(*doc);
  (void)parse_auth(*doc);
  (void)parse_welcome(*doc, "fuzzed agent");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte sets how the bytes arrive: 1 to 256 at a time, as recv() may hand them.
  const std::size_t chunk = std::size_t{data[0]} + 1;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  FrameReader reader;
  while (!input.empty()) {
    auto room = reader.next();
    std::size_t n = std::min({room.size(), chunk, input.size()});
    std::copy_n(input.data(), n, room.data());
    input.remove_prefix(n);
    if (!reader.advance(n)) return 0; // an oversized frame ends the connection
    if (reader.complete()) parse_frame(reader.take());
  }
  return 0;
}
