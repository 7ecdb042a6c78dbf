#include "probes/rdma/rdma_report.h"

#include <algorithm>
#include <cstdio>

#include "common/units.h"

namespace fabric::probes {
namespace {

// "%.3f"-style text with `decimals` digits, or "%g" when decimals < 0.
std::string number(double value, int decimals) {
  char text[64];
  if (decimals < 0) {
    std::snprintf(text, sizeof text, "%g", value);
  } else {
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
  }
  return text;
}

void write_agent(json::Writer& w, const RdmaAgentInfo& agent) {
  w.field("agent", agent.endpoint)
      .field("agent_hostname", agent.hostname)
      .field("agent_version", agent.version);
}

void write_params(json::Writer& w, const RdmaOptions& o, const RdmaConnectionInfo& c) {
  w.key("params").begin_object();
  w.field("op", rdma_op_name(o.op)).field("qps", o.qps).field("bidir", o.bidir);
  if (o.duration) {
    w.field("duration_s", units::seconds(*o.duration));
  } else {
    w.field("iters", o.iters);
  }
  if (o.test == RdmaTest::kBandwidth) w.field("tx_depth", o.tx_depth);
  w.key("sizes").begin_array();
  for (uint64_t s : o.sizes)
    w.value(s);
  w.end_array();
  w.field("connection", c.method);
  w.end_object();
}

void write_side(json::Writer& w, const char* name, const RdmaSideInfo& s) {
  w.key(name).begin_object();
  w.field("device", s.gid.rdma_device)
      .field("port", s.gid.port)
      .field("gid_index", s.gid.gid_index)
      .field("gid", s.gid.gid)
      .field("gid_type", rdma::gid_type_name(s.gid.type))
      .field("netdev", s.gid.netdev)
      .field("ipv4", s.gid.ipv4)
      .field("gid_reason", s.gid.reason)
      .field("active_mtu_bytes", s.active_mtu)
      .field("memory", s.gpu_memory ? "gpu" : "host");
  if (s.gpu_registration.empty()) {
    w.key("gpu_registration").null();
  } else {
    w.field("gpu_registration", s.gpu_registration);
  }
  w.end_object();
}

void write_connection(json::Writer& w, const RdmaConnectionInfo& c) {
  w.key("connection").begin_object();
  w.field("method", c.method)
      .field("mtu_bytes", c.mtu)
      .field("traffic_class", static_cast<unsigned>(c.traffic_class))
      .field("sl", static_cast<unsigned>(c.sl))
      .field("max_inline_bytes", c.max_inline);
  write_side(w, "local", c.local);
  write_side(w, "remote", c.remote);
  w.end_object();
}

void write_counters(json::Writer& w, const RdmaCounters& c) {
  w.key("counters").begin_object();
  w.key("local");
  if (c.local) {
    write_counters_json(w, *c.local);
  } else {
    w.null();
  }
  w.key("remote");
  if (c.remote) {
    write_counters_json(w, *c.remote);
  } else {
    w.null();
  }
  w.end_object();
}

void write_bw_fields(json::Writer& w, const BwSizeResult& r) {
  const double avg = r.avg_bytes_per_s();
  const double peak = r.peak_bytes_per_s();
  w.field("avg_gbps", units::bytes_per_second_to_gbps(avg))
      .field("avg_gbytes_per_s", units::bytes_per_second_to_gbytes(avg))
      .field("peak_gbps", units::bytes_per_second_to_gbps(peak))
      .field("peak_gbytes_per_s", units::bytes_per_second_to_gbytes(peak))
      .field("msg_rate_mpps", r.msg_rate_mpps());
}

double side_rate(const SideStats& s) {
  return s.seconds > 0 ? static_cast<double>(s.bytes) / s.seconds : 0.0;
}

std::string side_text(const RdmaSideInfo& s) {
  std::string text = describe_gid_choice(s.gid);
  text += s.gpu_memory ? ", GPU memory" : ", host memory";
  if (!s.gpu_registration.empty()) text += " (" + s.gpu_registration + ")";
  return text;
}

std::string header_text(const char* test, const RdmaAgentInfo& agent, const RdmaOptions& o,
                        const RdmaConnectionInfo& c) {
  std::string out = std::string(test) + " " + std::string(rdma_op_name(o.op)) +
                    (o.bidir ? " (both directions)" : "") + " with " + agent.endpoint + " (agent " +
                    agent.hostname + ", " + agent.version + ")\n";
  out += "connection: " + std::string(c.method == "rdma_cm" ? "librdmacm" : "out-of-band") +
         ", MTU " + std::to_string(c.mtu) + ", traffic class " + std::to_string(c.traffic_class) +
         ", SL " + std::to_string(c.sl) + ", " + std::to_string(o.qps) +
         (o.qps == 1 ? " QP" : " QPs");
  if (o.test == RdmaTest::kBandwidth) out += ", TX depth " + std::to_string(o.tx_depth);
  out += ", inline up to " + std::to_string(c.max_inline) + " B\n";
  out += "  this side: " + side_text(c.local) + "\n";
  out += "  agent:     " + side_text(c.remote) + "\n";
  return out;
}

std::string counters_text(const RdmaCounters& c) {
  std::string out;
  auto indent = [](const std::string& text) {
    std::string o;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      o += "  " + text.substr(start, end - start) + "\n";
      start = end + 1;
    }
    return o;
  };
  out += "counters on this side:\n";
  out += c.local ? indent(render_counters_text(*c.local)) : "  (not available)\n";
  out += "counters on the agent's side:\n";
  out += c.remote ? indent(render_counters_text(*c.remote)) : "  (not available)\n";
  return out;
}

} // namespace

uint64_t BwSizeResult::messages() const {
  return local.messages + (remote ? remote->messages : 0);
}

uint64_t BwSizeResult::bytes() const {
  return local.bytes + (remote ? remote->bytes : 0);
}

double BwSizeResult::seconds() const {
  return std::max(local.seconds, remote ? remote->seconds : 0.0);
}

double BwSizeResult::avg_bytes_per_s() const {
  return side_rate(local) + (remote ? side_rate(*remote) : 0.0);
}

double BwSizeResult::peak_bytes_per_s() const {
  return local.peak_bytes_per_s + (remote ? remote->peak_bytes_per_s : 0.0);
}

double BwSizeResult::msg_rate_mpps() const {
  double rate = local.seconds > 0 ? static_cast<double>(local.messages) / local.seconds : 0.0;
  if (remote && remote->seconds > 0)
    rate += static_cast<double>(remote->messages) / remote->seconds;
  return rate / 1e6;
}

std::string_view latency_kind(RdmaOp op) {
  return op == RdmaOp::kRead ? "rtt" : "rtt/2";
}

Result<std::optional<BwThreshold>> evaluate_threshold(const RdmaOptions& o,
                                                      const std::vector<BwSizeResult>& results,
                                                      std::optional<double> link_speed_gbps) {
  if (!o.min_bw_gbps && !o.min_bw_pct) return std::optional<BwThreshold>();
  BwThreshold t;
  t.min_gbps = o.min_bw_gbps;
  t.min_pct = o.min_bw_pct;
  if (o.min_bw_gbps) {
    t.required_gbps = *o.min_bw_gbps;
  } else {
    if (!link_speed_gbps) {
      return Error(ErrorCode::kUnsupported, "--min-bw-pct",
                   "the port reports no link speed to take a percentage of")
          .with_hint("give an absolute floor with --min-bw GBPS");
    }
    t.required_gbps = *link_speed_gbps * *o.min_bw_pct / 100.0;
  }
  double measured =
      results.empty() ? 0.0 : units::bytes_per_second_to_gbps(results.back().avg_bytes_per_s());
  t.passed = measured >= t.required_gbps;
  return std::optional<BwThreshold>(t);
}

Error below_threshold_error(const BwThreshold& t, double measured_gbps) {
  std::string required = number(t.required_gbps, 3) + " Gb/s";
  if (t.min_pct) required += " (" + number(*t.min_pct, -1) + "% of the link speed)";
  return Error(ErrorCode::kBelowThreshold, "bandwidth check",
               "measured " + number(measured_gbps, 3) + " Gb/s" + ", below the required " +
                   required);
}

Result<void> rdma_bw_verdict(const RdmaBwReport& report) {
  if (!report.threshold || report.threshold->passed) return Ok();
  double measured = report.results.empty()
                        ? 0.0
                        : units::bytes_per_second_to_gbps(report.results.back().avg_bytes_per_s());
  return below_threshold_error(*report.threshold, measured);
}

void write_rdma_bw_json(json::Writer& w, const RdmaBwReport& r) {
  w.begin_object().field("schema_version", json::kSchemaVersion).field("test", "rdma_bw");
  write_agent(w, r.agent);
  write_params(w, r.options, r.connection);
  write_connection(w, r.connection);
  w.field("link_speed_gbps", r.link_speed_gbps);
  w.key("results").begin_array();
  for (const auto& s : r.results) {
    w.begin_object()
        .field("size_bytes", s.size)
        .field("iterations", s.iterations)
        .field("messages", s.messages())
        .field("bytes", s.bytes())
        .field("seconds", s.seconds());
    write_bw_fields(w, s);
    if (s.remote) {
      w.field("local_avg_gbps", units::bytes_per_second_to_gbps(side_rate(s.local)))
          .field("remote_avg_gbps", units::bytes_per_second_to_gbps(side_rate(*s.remote)));
    }
    w.end_object();
  }
  w.end_array();
  write_counters(w, r.counters);
  if (r.threshold) {
    w.key("threshold").begin_object();
    w.field("min_gbps", r.threshold->min_gbps)
        .field("min_pct", r.threshold->min_pct)
        .field("required_gbps", r.threshold->required_gbps)
        .field("passed", r.threshold->passed);
    w.end_object();
  }
  w.key("summary").begin_object();
  if (!r.results.empty()) {
    const BwSizeResult& last = r.results.back();
    w.field("size_bytes", last.size);
    write_bw_fields(w, last);
  }
  w.end_object().end_object();
}

void write_rdma_lat_json(json::Writer& w, const RdmaLatReport& r) {
  w.begin_object().field("schema_version", json::kSchemaVersion).field("test", "rdma_lat");
  write_agent(w, r.agent);
  write_params(w, r.options, r.connection);
  write_connection(w, r.connection);
  w.field("latency", latency_kind(r.options.op));
  w.key("results").begin_array();
  for (const auto& s : r.results) {
    w.begin_object().field("size_bytes", s.size).field("iterations", s.iterations);
    write_latency_fields(w, s.summary);
    w.end_object();
  }
  w.end_array();
  write_counters(w, r.counters);
  w.key("summary").begin_object();
  if (!r.results.empty()) {
    w.field("size_bytes", r.results.front().size);
    write_latency_fields(w, r.results.front().summary);
  }
  w.end_object().end_object();
}

std::string render_rdma_bw_json(const RdmaBwReport& report, bool pretty) {
  json::Writer w(pretty);
  write_rdma_bw_json(w, report);
  return w.str();
}

std::string render_rdma_lat_json(const RdmaLatReport& report, bool pretty) {
  json::Writer w(pretty);
  write_rdma_lat_json(w, report);
  return w.str();
}

std::string render_rdma_bw_text(const RdmaBwReport& r) {
  std::string out = header_text("rdma_bw", r.agent, r.options, r.connection);
  char line[200];
  std::snprintf(line, sizeof line, "%10s %12s %11s %11s %11s %11s %11s\n", "#bytes", "#iterations",
                "peak Gb/s", "avg Gb/s", "peak GB/s", "avg GB/s", "Mpps");
  out += line;
  for (const auto& s : r.results) {
    const double avg = s.avg_bytes_per_s();
    const double peak = s.peak_bytes_per_s();
    std::snprintf(line, sizeof line, "%10llu %12llu %11.3f %11.3f %11.4f %11.4f %11.6f\n",
                  static_cast<unsigned long long>(s.size),
                  static_cast<unsigned long long>(s.iterations),
                  units::bytes_per_second_to_gbps(peak), units::bytes_per_second_to_gbps(avg),
                  units::bytes_per_second_to_gbytes(peak), units::bytes_per_second_to_gbytes(avg),
                  s.msg_rate_mpps());
    out += line;
  }
  out += "(Gb/s = 1e9 bit/s, GB/s = 1e9 byte/s";
  out += r.options.bidir ? "; both directions summed)\n" : ")\n";
  if (r.link_speed_gbps) out += "link speed: " + number(*r.link_speed_gbps, -1) + " Gb/s" + "\n";
  if (r.threshold) {
    out += std::string("threshold: ") + (r.threshold->passed ? "passed" : "FAILED") +
           ", required " + number(r.threshold->required_gbps, 3) + " Gb/s" + "\n";
  }
  out += counters_text(r.counters);
  return out;
}

std::string render_rdma_lat_text(const RdmaLatReport& r) {
  std::string out = header_text("rdma_lat", r.agent, r.options, r.connection);
  out += "latency in microseconds, " +
         std::string(r.options.op == RdmaOp::kRead ? "whole read (round trip)" : "round trip / 2") +
         "\n";
  char line[200];
  std::snprintf(line, sizeof line, "%10s %12s %9s %9s %9s %9s %9s %9s %9s\n", "#bytes",
                "#iterations", "min", "p50", "p99", "p99.9", "max", "mean", "stdev");
  out += line;
  for (const auto& s : r.results) {
    const LatencySummary& l = s.summary;
    std::snprintf(line, sizeof line, "%10llu %12llu %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
                  static_cast<unsigned long long>(s.size),
                  static_cast<unsigned long long>(s.iterations), l.min, l.p50, l.p99, l.p999, l.max,
                  l.mean, l.stdev);
    out += line;
  }
  out += counters_text(r.counters);
  return out;
}

Result<CounterDelta> parse_counters_json(const rapidjson::Value& v, std::string_view path) {
  const std::string where(path);
  if (!v.IsObject()) return Error(ErrorCode::kDecode, where, "must be an object");
  CounterDelta d;
  auto seconds = v.FindMember("seconds");
  if (seconds != v.MemberEnd()) {
    if (!seconds->value.IsNumber()) {
      return Error(ErrorCode::kDecode, json::field_path(where, "seconds"), "must be a number");
    }
    d.seconds = seconds->value.GetDouble();
  }
  for (const char* group : {"port", "hw", "eth"}) {
    auto g = v.FindMember(group);
    if (g == v.MemberEnd()) continue;
    if (!g->value.IsObject()) {
      return Error(ErrorCode::kDecode, json::field_path(where, group), "must be an object");
    }
    for (auto m = g->value.MemberBegin(); m != g->value.MemberEnd(); ++m) {
      if (!m->value.IsUint64()) {
        return Error(ErrorCode::kDecode,
                     json::field_path(json::field_path(where, group), m->name.GetString()),
                     "must be an unsigned integer");
      }
      d.values[std::string(group) + "." + m->name.GetString()] = m->value.GetUint64();
    }
  }
  auto notes = v.FindMember("notes");
  if (notes != v.MemberEnd() && notes->value.IsArray()) {
    for (const auto& n : notes->value.GetArray()) {
      if (n.IsString()) d.notes.emplace_back(n.GetString());
    }
  }
  return d;
}

} // namespace fabric::probes
