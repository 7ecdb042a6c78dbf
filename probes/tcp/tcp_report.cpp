// Rendering of the TCP probes' reports (declared in tcp_test.h): JSON and terminal text.
#include <cstdio>

#include "common/units.h"
#include "probes/tcp/tcp_test.h"

namespace fabric::probes {
namespace {

void write_agent(json::Writer& w, const AgentIdentity& agent) {
  w.field("agent", agent.endpoint)
      .field("agent_hostname", agent.hostname)
      .field("agent_version", agent.version);
}

void write_totals(json::Writer& w, const char* name, const TransferTotals& t) {
  w.key(name).begin_object();
  w.field("bytes", t.bytes)
      .field("seconds", t.seconds)
      .field("gbps", t.gbps())
      .field("gbytes_per_s", t.gbytes_per_s());
  w.end_object();
}

std::string seconds_text(double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

std::string gbps_text(double gbps) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f Gb/s", gbps);
  return text;
}

std::string direction_label(const std::string& name) {
  return name == "client_to_agent" ? "client -> agent" : "agent -> client";
}

} // namespace

void write_tcp_bw_json(json::Writer& w, const TcpBwReport& report) {
  const TcpBwOptions& o = report.options;
  w.begin_object().field("schema_version", json::kSchemaVersion).field("test", kTcpBwTest);
  write_agent(w, report.agent);
  w.key("params").begin_object();
  w.field("streams", static_cast<uint64_t>(o.streams))
      .field("write_size_bytes", static_cast<uint64_t>(o.write_size))
      .field("direction", tcp_direction_name(o.direction));
  if (o.bytes != 0) {
    w.field("total_bytes", o.bytes);
  } else {
    w.field("duration_s", std::chrono::duration<double>(o.duration).count());
  }
  w.end_object();
  w.key("directions").begin_array();
  for (const auto& d : report.directions) {
    w.begin_object().field("direction", d.name);
    write_totals(w, "sender", d.sender);
    write_totals(w, "receiver", d.receiver);
    w.key("streams").begin_array();
    for (std::size_t i = 0; i < d.receiver_streams.size(); ++i) {
      w.begin_object().field("stream", static_cast<uint64_t>(i));
      if (i < d.sender_stream_bytes.size()) w.field("sender_bytes", d.sender_stream_bytes[i]);
      w.field("receiver_bytes", d.receiver_streams[i].bytes)
          .field("receiver_gbps", d.receiver_streams[i].gbps())
          .end_object();
    }
    w.end_array().end_object();
  }
  w.end_array();
  uint64_t bytes = 0;
  double seconds = 0;
  for (const auto& d : report.directions) {
    bytes += d.receiver.bytes;
    seconds = std::max(seconds, d.receiver.seconds);
  }
  w.key("summary").begin_object();
  w.field("avg_gbps", report.avg_gbps())
      .field("avg_gbytes_per_s", report.avg_gbytes_per_s())
      .field("received_bytes", bytes)
      .field("seconds", seconds);
  w.end_object().end_object();
}

void write_tcp_lat_json(json::Writer& w, const TcpLatReport& report) {
  w.begin_object().field("schema_version", json::kSchemaVersion).field("test", kTcpLatTest);
  write_agent(w, report.agent);
  w.key("params").begin_object();
  w.field("size_bytes", static_cast<uint64_t>(report.options.size))
      .field("iters", static_cast<uint64_t>(report.options.iters))
      .field("warmup", static_cast<uint64_t>(report.options.warmup));
  w.end_object();
  w.key("summary").begin_object();
  write_latency_fields(w, report.summary);
  w.end_object().end_object();
}

std::string render_tcp_bw_json(const TcpBwReport& report, bool pretty) {
  json::Writer w(pretty);
  write_tcp_bw_json(w, report);
  return w.str();
}

std::string render_tcp_lat_json(const TcpLatReport& report, bool pretty) {
  json::Writer w(pretty);
  write_tcp_lat_json(w, report);
  return w.str();
}

std::string render_tcp_json(const TcpBwReport* bw, const TcpLatReport* lat) {
  if (bw == nullptr) return render_tcp_lat_json(*lat);
  if (lat == nullptr) return render_tcp_bw_json(*bw);
  json::Writer w;
  w.begin_object().field("schema_version", json::kSchemaVersion).field("test", "tcp");
  w.key("tcp_bw");
  write_tcp_bw_json(w, *bw);
  w.key("tcp_lat");
  write_tcp_lat_json(w, *lat);
  w.end_object();
  return w.str();
}

std::string render_tcp_bw_text(const TcpBwReport& report) {
  const TcpBwOptions& o = report.options;
  std::string out = "tcp_bw to " + report.agent.endpoint + " (agent " + report.agent.hostname +
                    "): " + std::to_string(o.streams) +
                    (o.streams == 1 ? " stream, " : " streams, ") +
                    units::format_size(o.write_size) + " writes, ";
  out += o.bytes != 0 ? units::format_size(o.bytes)
                      : seconds_text(std::chrono::duration<double>(o.duration).count());
  out += "\n";
  char line[160];
  std::snprintf(line, sizeof line, "%-16s %-9s %16s %9s %9s %8s\n", "direction", "side", "bytes",
                "seconds", "Gb/s", "GB/s");
  out += line;
  for (const auto& d : report.directions) {
    for (const auto& [side, t] :
         {std::pair{"sender", d.sender}, std::pair{"receiver", d.receiver}}) {
      std::snprintf(line, sizeof line, "%-16s %-9s %16llu %9.3f %9.3f %8.3f\n",
                    direction_label(d.name).c_str(), side, static_cast<unsigned long long>(t.bytes),
                    t.seconds, t.gbps(), t.gbytes_per_s());
      out += line;
    }
  }
  if (report.directions.size() > 1) {
    out += "total received: " + gbps_text(report.avg_gbps()) + "\n";
  }
  return out;
}

std::string render_tcp_interval_text(const TcpInterval& interval) {
  char line[96];
  std::snprintf(line, sizeof line, "[%6.1f-%6.1f s] %12s %12s\n", interval.start_s, interval.end_s,
                units::format_size(interval.bytes).c_str(), gbps_text(interval.gbps()).c_str());
  return line;
}

std::string render_tcp_lat_text(const TcpLatReport& report) {
  const LatencySummary& s = report.summary;
  std::string out = "tcp_lat to " + report.agent.endpoint + " (agent " + report.agent.hostname +
                    "): " + units::format_size(report.options.size) + " messages, " +
                    std::to_string(s.count) + " iterations, RTT/2 in us\n";
  char line[200];
  std::snprintf(line, sizeof line,
                "min %.2f  p50 %.2f  p99 %.2f  p99.9 %.2f  max %.2f  mean %.2f  stdev %.2f\n",
                s.min, s.p50, s.p99, s.p999, s.max, s.mean, s.stdev);
  return out + line;
}

} // namespace fabric::probes
