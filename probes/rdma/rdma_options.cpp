#include "probes/rdma/rdma_options.h"

#include <cmath>

#include "common/json.h"
#include "common/units.h"
#include "libs/agent_channel/tcp_socket.h"
#include "probes/agent/protocol.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;

// The same checks serve the command line and the params from the network; only the
// names in the messages differ ("--size" there, "params.sizes" here).
enum class Field {
  kOp,
  kSize,
  kIters,
  kDuration,
  kQps,
  kTxDepth,
  kBidir,
  kGidIndex,
  kRemoteGidIndex,
  kTclass,
  kSl,
  kMtu,
  kDevice,
  kRemoteDevice,
  kCm,
  kGpu,
  kMinBw,
  kMinBwPct,
  kTimeout,
};

struct Naming {
  bool cli;
  std::string operator()(Field f) const {
    switch (f) {
    case Field::kOp: return cli ? "--op" : "params.op";
    case Field::kSize: return cli ? "--size" : "params.sizes";
    case Field::kIters: return cli ? "--iters" : "params.iters";
    case Field::kDuration: return cli ? "--duration" : "params.duration_s";
    case Field::kQps: return cli ? "--qps" : "params.qps";
    case Field::kTxDepth: return cli ? "--tx-depth" : "params.tx_depth";
    case Field::kBidir: return cli ? "--bidir" : "params.bidir";
    case Field::kGidIndex: return cli ? "--gid-index" : "params.gid_index";
    case Field::kRemoteGidIndex: return cli ? "--remote-gid-index" : "params.remote_gid_index";
    case Field::kTclass: return cli ? "--tclass" : "params.tclass";
    case Field::kSl: return cli ? "--sl" : "params.sl";
    case Field::kMtu: return cli ? "--mtu" : "params.mtu";
    case Field::kDevice: return cli ? "--device" : "params.device";
    case Field::kRemoteDevice: return cli ? "--remote-device" : "params.remote_device";
    case Field::kCm: return cli ? "--cm" : "params.cm";
    case Field::kGpu: return cli ? "--gpu" : "params.gpu";
    case Field::kMinBw: return cli ? "--min-bw" : "params.min_bw_gbps";
    case Field::kMinBwPct: return cli ? "--min-bw-pct" : "params.min_bw_pct";
    case Field::kTimeout: return cli ? "--timeout" : "params.timeout_ms";
    }
    return "?";
  }
};

Error invalid(std::string what, std::string detail) {
  return Error(ErrorCode::kInvalidArgument, std::move(what), std::move(detail));
}

bool is_power_of_two(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

Result<void> check_size(uint64_t size, const std::string& what) {
  if (size == 0) return invalid(what, "a message needs at least 1 byte");
  if (size > kMaxMessageBytes) {
    return invalid(what, units::format_size(size) + " is larger than the limit of " +
                             units::format_size(kMaxMessageBytes));
  }
  return Ok();
}

// Combinations and ranges shared by both paths; the single values are already parsed.
Result<void> validate(const RdmaOptions& o, const Naming& name) {
  const bool bw = o.test == RdmaTest::kBandwidth;
  if (o.sizes.empty()) return invalid(name(Field::kSize), "no message size");
  for (uint64_t s : o.sizes)
    FABRIC_TRY(check_size(s, name(Field::kSize)));
  if (o.qps < 1 || o.qps > kMaxQps) {
    return invalid(name(Field::kQps), std::to_string(o.qps) + " is out of range (1 to " +
                                          std::to_string(kMaxQps) + ")");
  }
  // Cannot overflow: at most 64 QPs x 2 x 1 GiB.
  uint64_t buffers = static_cast<uint64_t>(o.qps) * 2 * o.max_size();
  if (buffers > kMaxBufferBytes) {
    return invalid(name(Field::kSize), std::to_string(o.qps) + " queue pairs x 2 buffers x " +
                                           units::format_size(o.max_size()) + " exceed " +
                                           units::format_size(kMaxBufferBytes) +
                                           " of registered memory");
  }
  if (!bw && o.qps != 1) return invalid(name(Field::kQps), "lat uses one queue pair");
  if (!bw && o.bidir) return invalid(name(Field::kBidir), "only bw runs both directions");
  if (o.duration && o.iters != 0) {
    return invalid(name(Field::kDuration), "give either " + name(Field::kIters) + " or " +
                                               name(Field::kDuration) + ", not both");
  }
  if (!o.duration && (o.iters < 1 || o.iters > kMaxIters)) {
    return invalid(name(Field::kIters),
                   std::to_string(o.iters) + " is out of range (1 to 1000000000)");
  }
  if (!bw && o.iters > kMaxLatIters) {
    return invalid(name(Field::kIters), std::to_string(o.iters) +
                                            " is too many for lat, which keeps every sample "
                                            "for its percentiles (at most " +
                                            std::to_string(kMaxLatIters) + ")");
  }
  if (o.duration) {
    if (!bw) {
      return invalid(name(Field::kDuration),
                     "lat needs a fixed number of samples: use " + name(Field::kIters));
    }
    if (*o.duration <= std::chrono::nanoseconds(0) || *o.duration > kMaxDuration) {
      return invalid(name(Field::kDuration), "must be above 0 and at most 24h");
    }
  }
  if (o.tx_depth < 1 || o.tx_depth > kMaxTxDepth) {
    return invalid(name(Field::kTxDepth), std::to_string(o.tx_depth) + " is out of range (1 to " +
                                              std::to_string(kMaxTxDepth) + ")");
  }
  if (o.mtu) {
    uint32_t m = *o.mtu;
    if (m != 256 && m != 512 && m != 1024 && m != 2048 && m != 4096) {
      return invalid(name(Field::kMtu),
                     std::to_string(m) + " is not an RDMA MTU (256, 512, 1024, 2048 or 4096)");
    }
  }
  if (o.sl > 15)
    return invalid(name(Field::kSl), std::to_string(o.sl) + " is out of range (0 to 15)");
  if (o.use_cm) {
    // librdmacm resolves the GID from the address and the path MTU from the route; a
    // forced value would be silently ignored, so it is refused instead.
    if (o.gid_index) {
      return invalid(name(Field::kGidIndex),
                     "cannot be combined with " + name(Field::kCm) +
                         " (librdmacm picks the GID of the address it resolves)");
    }
    if (o.remote_gid_index) {
      return invalid(name(Field::kRemoteGidIndex),
                     "cannot be combined with " + name(Field::kCm) +
                         " (librdmacm picks the GID of the address it resolves)");
    }
    if (o.device || o.remote_device) {
      return invalid(name(o.device ? Field::kDevice : Field::kRemoteDevice),
                     "cannot be combined with " + name(Field::kCm) +
                         " (librdmacm picks the device that owns the address it resolves)");
    }
    if (o.mtu) {
      return invalid(name(Field::kMtu), "cannot be combined with " + name(Field::kCm) +
                                            " (librdmacm takes the path MTU from the route)");
    }
    if (o.sl != 0) {
      return invalid(name(Field::kSl), "cannot be combined with " + name(Field::kCm) +
                                           " (RoCE through librdmacm takes its priority from "
                                           "the traffic class)");
    }
  }
  if (o.gpu) {
    if (*o.gpu < 0 || *o.gpu > 1023) {
      return invalid(name(Field::kGpu), std::to_string(*o.gpu) + " is out of range (0 to 1023)");
    }
    if (!bw && o.op == RdmaOp::kWrite) {
      return invalid(name(Field::kGpu), "lat --op write detects arrival by polling the buffer "
                                        "from the CPU; use --op send or --op read with GPU memory");
    }
  }
  if (o.min_bw_gbps && o.min_bw_pct) {
    return invalid(name(Field::kMinBwPct),
                   "give either " + name(Field::kMinBw) + " or " + name(Field::kMinBwPct));
  }
  if (o.min_bw_gbps && !(*o.min_bw_gbps > 0)) {
    return invalid(name(Field::kMinBw), "must be greater than 0");
  }
  if (o.min_bw_pct && !(*o.min_bw_pct > 0 && *o.min_bw_pct <= 100)) {
    return invalid(name(Field::kMinBwPct), "must be above 0 and at most 100");
  }
  if (!bw && (o.min_bw_gbps || o.min_bw_pct)) {
    return invalid(name(o.min_bw_gbps ? Field::kMinBw : Field::kMinBwPct),
                   "is a bandwidth floor: bw only");
  }
  if (o.timeout < 100ms || o.timeout > std::chrono::hours(1)) {
    return invalid(name(Field::kTimeout), "must be between 100ms and 1h");
  }
  return Ok();
}

template <typename T>
Result<T> parse_ranged(const std::optional<std::string>& text, const char* what, uint64_t min,
                       uint64_t max, T fallback) {
  if (!text) return fallback;
  FABRIC_ASSIGN_OR_RETURN(uint64_t v, units::parse_uint(*text, what, min, max));
  return static_cast<T>(v);
}

} // namespace

std::string_view rdma_op_name(RdmaOp op) {
  switch (op) {
  case RdmaOp::kWrite: return "write";
  case RdmaOp::kRead: return "read";
  case RdmaOp::kSend: return "send";
  }
  return "?";
}

std::string_view rdma_test_name(RdmaTest test) {
  return test == RdmaTest::kBandwidth ? "rdma_bw" : "rdma_lat";
}

Result<RdmaOp> parse_rdma_op(std::string_view text, std::string_view what) {
  if (text == "write") return RdmaOp::kWrite;
  if (text == "read") return RdmaOp::kRead;
  if (text == "send") return RdmaOp::kSend;
  return invalid(std::string(what),
                 "unknown operation '" + std::string(text) + "' (expected write, read or send)");
}

Result<uint32_t> parse_rdma_mtu(std::string_view text, std::string_view what) {
  FABRIC_ASSIGN_OR_RETURN(uint64_t v, units::parse_uint(text, what, 256, 4096));
  if (!is_power_of_two(v)) {
    return invalid(std::string(what),
                   std::string(text) + " is not an RDMA MTU (256, 512, 1024, 2048 or 4096)");
  }
  return static_cast<uint32_t>(v);
}

Result<std::vector<uint64_t>> parse_sweep(std::string_view text, std::string_view what) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    return invalid(std::string(what),
                   "invalid value '" + std::string(text) + "' (expected MIN:MAX, such as 2:64K)");
  }
  FABRIC_ASSIGN_OR_RETURN(uint64_t lo, units::parse_size(text.substr(0, colon), what));
  FABRIC_ASSIGN_OR_RETURN(uint64_t hi, units::parse_size(text.substr(colon + 1), what));
  const std::string name(what);
  FABRIC_TRY(check_size(lo, name));
  FABRIC_TRY(check_size(hi, name));
  if (!is_power_of_two(lo) || !is_power_of_two(hi)) {
    return invalid(name, "both ends must be powers of two (got " + std::to_string(lo) + " and " +
                             std::to_string(hi) + ")");
  }
  if (lo > hi)
    return invalid(name, "MIN " + std::to_string(lo) + " is above MAX " + std::to_string(hi));
  std::vector<uint64_t> sizes;
  for (uint64_t s = lo; s <= hi; s *= 2)
    sizes.push_back(s);
  return sizes;
}

Result<RdmaOptions> make_rdma_options(RdmaTest test, const RdmaArgs& a) {
  RdmaOptions o;
  o.test = test;
  const bool bw = test == RdmaTest::kBandwidth;
  if (a.host.empty()) return invalid("HOST", "the agent's host is required");
  FABRIC_ASSIGN_OR_RETURN(uint16_t default_port, parse_agent_port(a.port));
  FABRIC_ASSIGN_OR_RETURN(Endpoint ep, parse_endpoint(a.host, default_port, "HOST"));
  o.host = ep.host;
  o.agent_port = ep.port;

  o.op = bw ? RdmaOp::kWrite : RdmaOp::kSend;
  if (a.op) {
    FABRIC_ASSIGN_OR_RETURN(o.op, parse_rdma_op(*a.op, "--op"));
  }

  if (a.size && a.sweep) return invalid("--sweep", "give either --size or --sweep, not both");
  if (a.size) {
    FABRIC_ASSIGN_OR_RETURN(uint64_t s, units::parse_size(*a.size, "--size"));
    o.sizes = {s};
  } else if (a.sweep) {
    FABRIC_ASSIGN_OR_RETURN(o.sizes, parse_sweep(*a.sweep, "--sweep"));
  } else {
    o.sizes = {bw ? kDefaultBwSize : kDefaultLatSize};
  }

  if (a.iters && a.duration)
    return invalid("--duration", "give either --iters or --duration, not both");
  if (a.duration) {
    FABRIC_ASSIGN_OR_RETURN(auto d, units::parse_duration(*a.duration, "--duration"));
    o.duration = d;
    o.iters = 0;
  } else {
    FABRIC_ASSIGN_OR_RETURN(o.iters,
                            parse_ranged<uint64_t>(a.iters, "--iters", 1, kMaxIters,
                                                   bw ? kDefaultBwIters : kDefaultLatIters));
  }
  FABRIC_ASSIGN_OR_RETURN(o.qps, parse_ranged<uint32_t>(a.qps, "--qps", 1, kMaxQps, 1));
  FABRIC_ASSIGN_OR_RETURN(o.tx_depth, parse_ranged<uint32_t>(a.tx_depth, "--tx-depth", 1,
                                                             kMaxTxDepth, kDefaultTxDepth));
  o.bidir = a.bidir;
  o.use_cm = a.cm;
  o.json = a.json;
  if (a.gid_index) {
    FABRIC_ASSIGN_OR_RETURN(o.gid_index,
                            parse_ranged<uint32_t>(a.gid_index, "--gid-index", 0, kMaxGidIndex, 0));
  }
  if (a.remote_gid_index) {
    FABRIC_ASSIGN_OR_RETURN(
        o.remote_gid_index,
        parse_ranged<uint32_t>(a.remote_gid_index, "--remote-gid-index", 0, kMaxGidIndex, 0));
  }
  if (a.tclass && a.dscp) return invalid("--dscp", "give either --tclass or --dscp, not both");
  FABRIC_ASSIGN_OR_RETURN(o.traffic_class, parse_ranged<uint8_t>(a.tclass, "--tclass", 0, 255, 0));
  if (a.dscp) {
    FABRIC_ASSIGN_OR_RETURN(uint8_t dscp, parse_ranged<uint8_t>(a.dscp, "--dscp", 0, 63, 0));
    // The traffic class byte carries DSCP in its upper six bits, ECN in the lower two.
    o.traffic_class = static_cast<uint8_t>(dscp << 2);
  }
  FABRIC_ASSIGN_OR_RETURN(o.sl, parse_ranged<uint8_t>(a.sl, "--sl", 0, 15, 0));
  if (a.mtu) {
    FABRIC_ASSIGN_OR_RETURN(o.mtu, parse_rdma_mtu(*a.mtu, "--mtu"));
  }
  if (a.device) {
    if (a.device->empty()) return invalid("--device", "an RDMA device name is required");
    o.device = *a.device;
  }
  if (a.remote_device) {
    if (a.remote_device->empty())
      return invalid("--remote-device", "an RDMA device name is required");
    o.remote_device = *a.remote_device;
  }
  FABRIC_ASSIGN_OR_RETURN(o.ib_port, parse_ranged<uint32_t>(a.ib_port, "--ib-port", 1, 255, 1));
  if (a.gpu) {
    FABRIC_ASSIGN_OR_RETURN(o.gpu, parse_ranged<int>(a.gpu, "--gpu", 0, 1023, 0));
  }
  if (a.min_bw) {
    FABRIC_ASSIGN_OR_RETURN(o.min_bw_gbps, units::parse_positive(*a.min_bw, "--min-bw"));
  }
  if (a.min_bw_pct) {
    FABRIC_ASSIGN_OR_RETURN(o.min_bw_pct, units::parse_positive(*a.min_bw_pct, "--min-bw-pct"));
  }
  if (a.timeout) {
    FABRIC_ASSIGN_OR_RETURN(auto t, units::parse_duration(*a.timeout, "--timeout"));
    o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(t);
  }
  FABRIC_TRY(validate(o, Naming{true}));
  return o;
}

std::string rdma_params_json(const RdmaOptions& o) {
  json::Writer w(false);
  w.begin_object();
  w.field("op", rdma_op_name(o.op));
  w.key("sizes").begin_array();
  for (uint64_t s : o.sizes)
    w.value(s);
  w.end_array();
  w.field("qps", o.qps);
  w.field("bidir", o.bidir);
  if (o.duration) {
    w.field("duration_s", units::seconds(*o.duration));
  } else {
    w.field("iters", o.iters);
  }
  w.field("tx_depth", o.tx_depth);
  w.field("cm", o.use_cm);
  w.field("tclass", static_cast<unsigned>(o.traffic_class));
  w.field("sl", static_cast<unsigned>(o.sl));
  if (o.mtu) w.field("mtu", *o.mtu);
  if (o.gid_index) w.field("gid_index", *o.gid_index);
  if (o.remote_gid_index) w.field("remote_gid_index", *o.remote_gid_index);
  if (o.device) w.field("device", *o.device);
  if (o.remote_device) w.field("remote_device", *o.remote_device);
  w.field("ib_port", o.ib_port);
  if (o.gpu) w.field("gpu", *o.gpu);
  if (o.min_bw_gbps) w.field("min_bw_gbps", *o.min_bw_gbps);
  if (o.min_bw_pct) w.field("min_bw_pct", *o.min_bw_pct);
  w.field("timeout_ms", static_cast<int64_t>(o.timeout.count()));
  w.end_object();
  std::string text = w.str();
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

namespace {

// An integer member within [min, max], or `fallback` when absent.
template <typename T>
Result<T> param_uint(const rapidjson::Value& p, std::string_view name, uint64_t min, uint64_t max,
                     T fallback) {
  FABRIC_ASSIGN_OR_RETURN(auto v, json::get_optional_int(p, "params", name));
  if (!v) return fallback;
  if (*v < 0 || static_cast<uint64_t>(*v) < min || static_cast<uint64_t>(*v) > max) {
    return invalid(json::field_path("params", name), std::to_string(*v) + " is out of range (" +
                                                         std::to_string(min) + " to " +
                                                         std::to_string(max) + ")");
  }
  return static_cast<T>(*v);
}

Result<std::optional<double>> param_double(const rapidjson::Value& p, std::string_view name) {
  auto it =
      p.FindMember(rapidjson::Value(name.data(), static_cast<rapidjson::SizeType>(name.size())));
  if (it == p.MemberEnd() || it->value.IsNull()) return std::optional<double>();
  if (!it->value.IsNumber()) return invalid(json::field_path("params", name), "must be a number");
  return std::optional<double>(it->value.GetDouble());
}

} // namespace

Result<RdmaOptions> rdma_options_from_params(RdmaTest test, const rapidjson::Value& p) {
  if (!p.IsObject()) return invalid("params", "must be a JSON object");
  RdmaOptions o;
  o.test = test;
  FABRIC_ASSIGN_OR_RETURN(auto op, json::get_optional_string(p, "params", "op"));
  o.op = test == RdmaTest::kBandwidth ? RdmaOp::kWrite : RdmaOp::kSend;
  if (op) {
    FABRIC_ASSIGN_OR_RETURN(o.op, parse_rdma_op(*op, "params.op"));
  }

  auto sizes = p.FindMember("sizes");
  if (sizes == p.MemberEnd()) {
    o.sizes = {test == RdmaTest::kBandwidth ? kDefaultBwSize : kDefaultLatSize};
  } else {
    if (!sizes->value.IsArray() || sizes->value.Empty() || sizes->value.Size() > 64) {
      return invalid("params.sizes", "must be an array of 1 to 64 sizes");
    }
    uint64_t previous = 0;
    for (rapidjson::SizeType i = 0; i < sizes->value.Size(); ++i) {
      const auto& v = sizes->value[i];
      std::string where = "params.sizes[" + std::to_string(i) + "]";
      if (!v.IsUint64()) return invalid(where, "must be a whole number of bytes");
      FABRIC_TRY(check_size(v.GetUint64(), where));
      if (v.GetUint64() <= previous) return invalid(where, "sizes must be ascending");
      previous = v.GetUint64();
      o.sizes.push_back(previous);
    }
  }
  FABRIC_ASSIGN_OR_RETURN(o.qps, param_uint<uint32_t>(p, "qps", 1, kMaxQps, 1));
  FABRIC_ASSIGN_OR_RETURN(auto bidir, json::get_optional_bool(p, "params", "bidir"));
  o.bidir = bidir.value_or(false);
  FABRIC_ASSIGN_OR_RETURN(auto duration_s, param_double(p, "duration_s"));
  if (duration_s) {
    if (!(*duration_s > 0) || *duration_s > static_cast<double>(kMaxDuration.count())) {
      return invalid("params.duration_s", "must be above 0 and at most 86400");
    }
    o.duration = std::chrono::nanoseconds(static_cast<int64_t>(std::llround(*duration_s * 1e9)));
    if (p.HasMember("iters"))
      return invalid("params.duration_s", "give either iters or duration_s");
  } else {
    FABRIC_ASSIGN_OR_RETURN(
        o.iters,
        param_uint<uint64_t>(p, "iters", 1, kMaxIters,
                             test == RdmaTest::kBandwidth ? kDefaultBwIters : kDefaultLatIters));
  }
  FABRIC_ASSIGN_OR_RETURN(o.tx_depth,
                          param_uint<uint32_t>(p, "tx_depth", 1, kMaxTxDepth, kDefaultTxDepth));
  FABRIC_ASSIGN_OR_RETURN(auto cm, json::get_optional_bool(p, "params", "cm"));
  o.use_cm = cm.value_or(false);
  FABRIC_ASSIGN_OR_RETURN(o.traffic_class, param_uint<uint8_t>(p, "tclass", 0, 255, 0));
  FABRIC_ASSIGN_OR_RETURN(o.sl, param_uint<uint8_t>(p, "sl", 0, 15, 0));
  if (p.HasMember("mtu")) {
    FABRIC_ASSIGN_OR_RETURN(uint32_t mtu, param_uint<uint32_t>(p, "mtu", 256, 4096, 0));
    o.mtu = mtu;
  }
  if (p.HasMember("gid_index")) {
    FABRIC_ASSIGN_OR_RETURN(uint32_t g, param_uint<uint32_t>(p, "gid_index", 0, kMaxGidIndex, 0));
    o.gid_index = g;
  }
  if (p.HasMember("remote_gid_index")) {
    FABRIC_ASSIGN_OR_RETURN(uint32_t g,
                            param_uint<uint32_t>(p, "remote_gid_index", 0, kMaxGidIndex, 0));
    o.remote_gid_index = g;
  }
  FABRIC_ASSIGN_OR_RETURN(o.device, json::get_optional_string(p, "params", "device"));
  FABRIC_ASSIGN_OR_RETURN(o.remote_device, json::get_optional_string(p, "params", "remote_device"));
  if ((o.device && o.device->empty()) || (o.remote_device && o.remote_device->empty())) {
    return invalid(o.device && o.device->empty() ? "params.device" : "params.remote_device",
                   "must not be empty");
  }
  FABRIC_ASSIGN_OR_RETURN(o.ib_port, param_uint<uint32_t>(p, "ib_port", 1, 255, 1));
  if (p.HasMember("gpu")) {
    FABRIC_ASSIGN_OR_RETURN(int gpu, param_uint<int>(p, "gpu", 0, 1023, 0));
    o.gpu = gpu;
  }
  FABRIC_ASSIGN_OR_RETURN(o.min_bw_gbps, param_double(p, "min_bw_gbps"));
  FABRIC_ASSIGN_OR_RETURN(o.min_bw_pct, param_double(p, "min_bw_pct"));
  FABRIC_ASSIGN_OR_RETURN(uint64_t timeout_ms,
                          param_uint<uint64_t>(p, "timeout_ms", 100, 3600000, 10000));
  o.timeout = std::chrono::milliseconds(timeout_ms);
  FABRIC_TRY(validate(o, Naming{false}));
  return o;
}

RdmaServerView server_view(const RdmaOptions& options) {
  return {options.remote_device, options.remote_gid_index};
}

SessionDemand rdma_session_demand(const RdmaOptions& o) {
  SessionDemand demand;
  demand.memory_bytes = static_cast<uint64_t>(o.qps) * 2 * o.max_size();
  demand.message_bytes = o.max_size();
  if (o.duration) demand.duration = *o.duration * static_cast<int64_t>(o.sizes.size());
  return demand;
}

Result<SessionDemand> rdma_bw_demand(const rapidjson::Value& params) {
  FABRIC_ASSIGN_OR_RETURN(RdmaOptions o, rdma_options_from_params(RdmaTest::kBandwidth, params));
  return rdma_session_demand(o);
}

Result<SessionDemand> rdma_lat_demand(const rapidjson::Value& params) {
  FABRIC_ASSIGN_OR_RETURN(RdmaOptions o, rdma_options_from_params(RdmaTest::kLatency, params));
  return rdma_session_demand(o);
}

} // namespace fabric::probes
