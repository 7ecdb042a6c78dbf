// nccl-tests' JSON, version 3, in its key order and value conventions (booleans as the
// strings "true"/"false", the root as its "%6i" text, a missing check as null), followed by
// fabric-nccltest's own "fabric" object.
#include <cmath>
#include <cstdio>
#include <ctime>

#include "common/build_info.h"
#include "common/json.h"
#include "nccltest/outputs.h"
#include "nccltest/rank_info.h"

namespace fabric::nccltest {
namespace {

void number(json::Writer& w, double v) {
  if (std::isnan(v)) {
    w.value("nan"); // as nccl-tests writes it
  } else if (std::isinf(v)) {
    w.null();
  } else {
    w.value(v);
  }
}

void placement(json::Writer& w, const char* key, const PlacementResult& p, bool cputime) {
  w.key(key).begin_object();
  w.key(cputime ? "cpu_time" : "time");
  number(w, p.time_us);
  w.key("alg_bw");
  number(w, p.algbw);
  w.key("bus_bw");
  number(w, p.busbw);
  w.key("nwrong");
  if (p.wrong) {
    w.value(static_cast<double>(*p.wrong));
  } else {
    w.null();
  }
  w.end_object();
}

// -I 1: writePerIterReport's object, after the placement's own.
void per_iteration(json::Writer& w, const char* key,
                   const std::optional<PerIteration>& iterations) {
  if (!iterations) return;
  const PerIteration& it = *iterations;
  w.key(key).begin_object();
  w.field("skipped_iterations", it.skipped);
  const std::pair<const char*, double> stats[] = {
      {"min_us", it.stats.min},     {"max_us", it.stats.max},   {"avg_us", it.stats.avg},
      {"p50_us", it.stats.p50},     {"p95_us", it.stats.p95},   {"p99_us", it.stats.p99},
      {"stdev_us", it.stats.stdev}, {"cv_pct", it.stats.cv_pct}};
  for (const auto& [name, value] : stats) {
    w.key(name);
    number(w, value);
  }
  w.key("times_us").begin_array();
  for (double t : it.times_us)
    number(w, t);
  w.end_array();
  if (!it.per_process_us.empty()) {
    w.key("per_process_max_times_us").begin_array();
    for (const std::vector<double>& process : it.per_process_us) {
      w.begin_array();
      for (double t : process)
        number(w, t);
      w.end_array();
    }
    w.end_array();
  }
  w.end_object();
}

std::string root_text(int root) {
  char text[16];
  std::snprintf(text, sizeof text, "%6i", root);
  return text;
}

void nccl_tests_config(json::Writer& w, const RunHeader& h) {
  w.key("config").begin_object();
  w.field("nthreads", h.nthreads).field("ngpus", h.ngpus);
  w.field("minimum_bytes", static_cast<uint64_t>(h.min_bytes));
  w.field("maximum_bytes", static_cast<uint64_t>(h.max_bytes));
  if (h.step_factor > 1) {
    w.field("step_factor", static_cast<uint64_t>(h.step_factor));
  } else {
    w.field("step_bytes", static_cast<uint64_t>(h.step_bytes));
  }
  w.field("warmup_iters", h.warmup_iters).field("iterations", h.iters);
  w.field("aggregated_iterations", h.agg_iters).field("validation", h.check_iters);
  w.field("graph", h.graph_launches);
  w.field("blocking_collectives", h.blocking ? "true" : "false");
  w.field("per_iter_timing", h.per_iteration ? "true" : "false");
  w.field("per_iter_skip", h.per_iteration_skip);
  w.field("parallel_init", h.parallel_init ? "true" : "false");
  w.key("devices").begin_array();
  for (const RankInfo& r : h.ranks) {
    w.begin_object();
    w.field("rank", r.rank).field("group", r.group).field("pid", r.pid);
    w.field("hostname", r.host).field("device", r.device).field("device_hex", r.pci_bus_id);
    w.field("device_info", r.device_name);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void fabric_ranks(json::Writer& w, const RunHeader& h) {
  w.key("ranks").begin_array();
  for (const RankInfo& r : h.ranks) {
    w.begin_object();
    write_rank_info_fields(w, r);
    w.end_object();
  }
  w.end_array();
}

void fabric_results(json::Writer& w, const std::vector<SizeRow>& rows) {
  w.key("results").begin_array();
  for (const SizeRow& row : rows) {
    w.begin_object();
    w.field("size", static_cast<uint64_t>(row.bytes))
        .field("count", static_cast<uint64_t>(row.count));
    w.field("type", data_type_name(row.type)).field("redop", row.op).field("root", row.root);
    for (bool in_place : {false, true}) {
      const PlacementResult& p = in_place ? row.in_place : row.out_of_place;
      w.key(in_place ? "in_place" : "out_of_place").begin_object();
      w.key("rank_time_us").begin_array();
      for (double t : p.rank_time_us)
        number(w, t);
      w.end_array().end_object();
    }
    w.end_object();
  }
  w.end_array();
}

void fabric_failures(json::Writer& w, const std::vector<RankCheckFailure>& failures) {
  w.key("check_failures").begin_array();
  for (const RankCheckFailure& f : failures) {
    w.begin_object();
    w.field("rank", f.rank).field("host", f.host).field("device", f.device);
    w.field("size", static_cast<uint64_t>(f.bytes)).field("type", data_type_name(f.type));
    w.field("redop", f.op).field("placement", f.in_place ? "in_place" : "out_of_place");
    w.field("wrong", static_cast<uint64_t>(f.wrong))
        .field("checked", static_cast<uint64_t>(f.checked));
    w.field("first_index", static_cast<uint64_t>(f.first_index));
    w.key("first_got");
    number(w, f.first_got);
    w.key("first_expected");
    number(w, f.first_expected);
    w.end_object();
  }
  w.end_array();
}

void fabric_transport(json::Writer& w, const std::optional<std::vector<TransportReport>>& t) {
  w.key("transport");
  if (!t) {
    w.null();
    return;
  }
  w.begin_array();
  for (const TransportReport& r : *t) {
    w.begin_object();
    w.field("network", r.network).field("rdma", uses_rdma(r));
    w.field("socket_fallback", socket_fallback(r));
    w.key("ib_devices").begin_array();
    for (const std::string& d : r.ib_devices)
      w.value(d);
    w.end_array();
    w.field("gpudirect_rdma", r.gpudirect_rdma).field("gid_index", r.gid_index);
    w.field("traffic_class", r.traffic_class);
    w.field("net_channels", r.net_channels).field("p2p_channels", r.p2p_channels);
    w.field("shm_channels", r.shm_channels);
    w.end_object();
  }
  w.end_array();
}

void fabric_hang(json::Writer& w, const std::optional<HangReport>& hang) {
  w.key("watchdog");
  if (!hang) {
    w.null();
    return;
  }
  w.begin_object().field("fired", true).field("timeout_s", hang->timeout_s);
  w.field("cause", hang->cause);
  w.key("waiting").begin_array();
  for (const RankStatus& s : hang->waiting) {
    w.begin_object().field("rank", s.rank).field("host", s.label.host);
    w.field("device", s.label.device).field("state", s.state).field("seconds", s.seconds);
    w.field("behind", s.behind).end_object();
  }
  w.end_array();
  w.key("behind").begin_array();
  for (int r : hang->behind)
    w.value(r);
  w.end_array();
  w.end_object();
}

void fabric_pairs(json::Writer& w, const std::optional<PairsReport>& pairs) {
  w.key("pairs");
  if (!pairs) {
    w.null();
    return;
  }
  const PairsReport& p = *pairs;
  w.begin_object();
  w.field("collective", p.collective).field("size", static_cast<uint64_t>(p.bytes));
  w.field("type", data_type_name(p.type)).field("redop", p.op).field("iterations", p.iters);
  w.field("by", p.by == PairsBy::kHost ? "host" : "rank");
  w.key("nodes").begin_array();
  for (const std::string& n : p.nodes)
    w.value(n);
  w.end_array();
  w.field("pattern", p.pattern);
  auto measurements = [&](const char* key, const std::vector<PairMeasurement>& list) {
    w.key(key).begin_array();
    for (const PairMeasurement& m : list) {
      w.begin_object().field("round", static_cast<uint64_t>(m.round + 1));
      w.field("a", p.nodes[m.a]).field("b", p.nodes[m.b]);
      w.field("time_us", m.time_us).field("busbw", m.busbw).end_object();
    }
    w.end_array();
  };
  measurements("pairs", p.pairs);
  measurements("follow_ups", p.follow_ups);
  w.key("ranking").begin_array();
  for (const NodeStanding& s : p.ranking) {
    w.begin_object().field("node", p.nodes[s.node]).field("median_busbw", s.median_busbw);
    w.field("slow", s.flagged).end_object();
  }
  w.end_array();
  w.key("mesh");
  probes::write_mesh_json(w, p.mesh);
  w.field("verdict", p.verdict);
  w.end_object();
}

} // namespace

std::string now_text() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

std::string render_json_report(const RunRecord& r) {
  const RunHeader& h = r.header;
  const RunFooter& f = r.footer;
  json::Writer w(true);
  w.begin_object();
  w.field("version", kNcclTestsJsonVersion).field("start_time", r.start_time);
  w.key("args").begin_array();
  for (const std::string& a : r.args)
    w.value(a);
  w.end_array();
  w.key("env").begin_array();
  for (const std::string& e : r.env)
    w.value(e);
  w.end_array();
  w.field("nccl_version", h.nccl_library);
  nccl_tests_config(w, h);
  w.key("results").begin_array();
  for (const SizeRow& row : r.rows) {
    w.begin_object();
    w.field("size", static_cast<uint64_t>(row.bytes))
        .field("count", static_cast<uint64_t>(row.count));
    w.field("type", data_type_name(row.type))
        .field("redop", row.op)
        .field("root", root_text(row.root));
    placement(w, "out_of_place", row.out_of_place, h.report_cputime);
    per_iteration(w, "out_of_place_per_iter", row.out_of_place_iterations);
    placement(w, "in_place", row.in_place, h.report_cputime);
    per_iteration(w, "in_place_per_iter", row.in_place_iterations);
    w.field("actual_iterations", h.iters).field("experiment_name", "");
    w.end_object();
  }
  w.end_array();
  w.key("out_of_bounds").begin_object();
  w.field("count", static_cast<int64_t>(f.out_of_bounds));
  w.field("okay", f.out_of_bounds == 0 ? "true" : "false").end_object();
  w.key("average_bus_bandwidth").begin_object();
  w.key("bandwidth");
  number(w, f.avg_busbw);
  if (f.threshold_ok) {
    w.field("okay", *f.threshold_ok ? "true" : "false");
  } else {
    w.field("okay", "unchecked");
  }
  w.end_object();
  w.key("errors").begin_array();
  if (r.hang) w.value("watchdog: " + r.hang->cause);
  w.end_array();

  w.key("fabric").begin_object();
  w.field("schema_version", json::kSchemaVersion);
  w.field("program", "fabric-nccltest").field("version", build_info().version);
  w.field("collective", r.collective).field("backend", h.backend);
  w.field("backend_reason", h.backend_reason).field("launcher", h.launcher);
  w.field("nranks", static_cast<int>(h.ranks.size())).field("nodes", h.nodes);
  w.field("nccl_headers", h.nccl_headers).field("nccl_library", h.nccl_library);
  fabric_ranks(w, h);
  fabric_results(w, r.rows);
  fabric_failures(w, f.failures);
  w.key("line_rate").begin_object();
  w.key("ceiling_gbytes_per_s");
  if (f.line_rate.ceiling_gbytes) {
    w.value(*f.line_rate.ceiling_gbytes);
  } else {
    w.null();
  }
  w.field("basis", f.line_rate.basis);
  w.key("avg_busbw_pct");
  if (f.line_rate.ceiling_gbytes && *f.line_rate.ceiling_gbytes > 0) {
    w.value(100.0 * f.avg_busbw / *f.line_rate.ceiling_gbytes);
  } else {
    w.null();
  }
  w.end_object();
  w.key("threshold");
  if (f.threshold_ok) {
    w.begin_object().field("min_busbw", f.threshold.min_busbw);
    w.field("min_busbw_pct", f.threshold.min_busbw_pct);
    w.field("from_nccl_tests_min_bw", f.threshold.from_nccl_tests_env);
    w.field("judged_busbw", f.judged_busbw).field("judged_on", f.judged_on);
    w.field("okay", *f.threshold_ok).end_object();
  } else {
    w.null();
  }
  fabric_transport(w, r.transport);
  fabric_hang(w, r.hang);
  fabric_pairs(w, r.pairs);
  w.key("fault_injection");
  if (r.fault.empty()) {
    w.null();
  } else {
    w.value(r.fault);
  }
  w.end_object();
  w.field("end_time", r.end_time);
  w.end_object();
  return w.str();
}

} // namespace fabric::nccltest
