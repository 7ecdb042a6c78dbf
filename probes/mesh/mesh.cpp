#include "probes/mesh/mesh.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/atomic_file.h"
#include "common/json.h"
#include "common/strings.h"
#include "libs/pair_schedules/mesh_schedule.h"
#include "probes/agent/protocol.h"
#include "probes/agent/session.h"
#include "probes/mesh/pair_scheduler.h"

namespace fabric::probes {
namespace {

using namespace std::chrono_literals;

// Merges the members of `extra` into `params` (extra wins).
Result<std::string> merge_params(const std::string& params_json, const std::string& extra_json) {
  if (extra_json.empty()) return params_json;
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document params, json::parse(params_json, "params"));
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document extra, json::parse(extra_json, "--params"));
  if (!extra.IsObject()) {
    return Error(ErrorCode::kInvalidArgument, "--params", "must be a JSON object");
  }
  for (const auto& m : std::as_const(extra).GetObject()) {
    rapidjson::Value key(m.name, params.GetAllocator());
    rapidjson::Value value(m.value, params.GetAllocator());
    params.RemoveMember(m.name);
    params.AddMember(key, value, params.GetAllocator());
  }
  return json::to_string(params);
}

} // namespace

Result<MeshTest> make_mesh_test(const std::string& name, const MeshTestSettings& s) {
  MeshTest t;
  t.name = name;
  json::Writer w(false);
  w.begin_object();
  if (name == "tcp_bw" || name == "rdma_bw") {
    t.metric = "avg_gbps";
    t.unit = "Gb/s";
    t.better = Better::kHigher;
    t.ordered = true;
    if (s.duration_s) w.field("duration_s", *s.duration_s);
    if (name == "tcp_bw") {
      if (s.size) w.field("write_size_bytes", *s.size);
      if (s.streams) w.field("streams", *s.streams);
    } else {
      if (s.size) w.key("sizes").begin_array().value(*s.size).end_array();
      if (s.streams) w.field("qps", *s.streams);
    }
  } else if (name == "tcp_lat" || name == "rdma_lat") {
    t.metric = "p50_us";
    t.unit = "us";
    t.better = Better::kLower;
    t.ordered = false; // round-trip latency is symmetric
    if (s.iters) w.field("iters", *s.iters);
    if (s.size) {
      if (name == "tcp_lat") {
        w.field("size_bytes", *s.size);
      } else {
        w.key("sizes").begin_array().value(*s.size).end_array();
      }
    }
  } else {
    return Error(ErrorCode::kInvalidArgument, "--test",
                 "'" + name + "' is not a mesh test (tcp_bw, tcp_lat, rdma_bw, rdma_lat)");
  }
  w.end_object();
  FABRIC_ASSIGN_OR_RETURN(t.params_json, merge_params(w.str(), s.extra_params_json));
  return t;
}

Result<double> report_metric(std::string_view report_json, const std::string& metric) {
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document doc, json::parse(report_json, "report"));
  FABRIC_ASSIGN_OR_RETURN(const rapidjson::Value* summary, json::get_object(doc, "", "summary"));
  auto it = summary->FindMember(metric.c_str());
  if (it == summary->MemberEnd() || !it->value.IsNumber()) {
    return Error(ErrorCode::kDecode, "summary." + metric, "missing from the report");
  }
  return it->value.GetDouble();
}

PairOutcome delegate_pair(const MeshHost& source, const MeshHost& destination, const MeshTest& test,
                          std::chrono::milliseconds timeout, const Token* token) {
  auto fail = [](const Error& e) { return PairOutcome{std::nullopt, e.message()}; };
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  std::string peer = format_endpoint(destination.agent);
  w.StartObject();
  w.Key("test");
  w.String(test.name.c_str());
  w.Key("peer");
  w.String(peer.c_str());
  w.Key("params");
  w.RawValue(test.params_json.data(), test.params_json.size(), rapidjson::kObjectType);
  w.EndObject();
  auto session = connect_session(source.agent.host, source.agent.port, kRunTest, buffer.GetString(),
                                 std::min<std::chrono::milliseconds>(timeout, 10s), token);
  if (!session.ok()) return fail(session.error());
  auto answer = session->channel.receive(timeout);
  if (!answer.ok()) {
    if (answer.error().code() == ErrorCode::kTimeout) {
      return {std::nullopt, "no result from the agent at " + session->agent + " within the " +
                                std::to_string(timeout.count() / 1000) + " s pair timeout"};
    }
    return fail(answer.error());
  }
  if (message_type(*answer) != "result") {
    return fail(unexpected_message(*answer, "result", "agent at " + session->agent));
  }
  const rapidjson::Value* report = json::find_member(*answer, "report");
  if (report == nullptr || !report->IsObject()) {
    return {std::nullopt, "the agent at " + session->agent + " sent a result without a report"};
  }
  auto value = report_metric(json::to_string(*report), test.metric);
  if (!value.ok()) return fail(value.error());
  return {*value, ""};
}

PairRunner agent_pair_runner(const MeshOptions& options) {
  std::optional<Token> token = options.token;
  return [token](const MeshHost& source, const MeshHost& destination, const MeshTest& test,
                 std::chrono::milliseconds timeout) {
    return delegate_pair(source, destination, test, timeout, token ? &*token : nullptr);
  };
}

Result<std::vector<MeshReport>> run_mesh(const MeshOptions& options, const MeshProgressFn& progress,
                                         const PairRunner& given_runner) {
  const PairRunner runner = given_runner ? given_runner : agent_pair_runner(options);
  const std::size_t n = options.hosts.size();
  if (n < 2) return Error(ErrorCode::kInvalidArgument, "--hosts", "needs at least two hosts");
  std::vector<MeshReport> reports;
  std::mutex progress_mutex;
  auto tell = [&](const MeshProgress& p) {
    if (!progress) return;
    std::lock_guard lock(progress_mutex);
    progress(p);
  };

  for (const MeshTest& test : options.tests) {
    MeshReport report;
    for (const auto& h : options.hosts)
      report.hosts.push_back(h.name);
    report.metric = test.name;
    report.unit = test.unit;
    report.better = test.better;
    report.matrix.assign(n, std::vector<std::optional<double>>(n));

    auto rounds = schedule_rounds(n, test.ordered);
    std::vector<std::vector<PairOutcome>> outcomes(rounds.size());
    for (std::size_t r = 0; r < rounds.size(); ++r)
      outcomes[r].resize(rounds[r].size());
    run_scheduled_pairs(rounds, n, options.parallel, [&](std::size_t r, std::size_t i) {
      auto [src, dst] = rounds[r][i];
      tell({&test, r + 1, rounds.size(), &options.hosts[src], &options.hosts[dst], false});
      outcomes[r][i] = runner(options.hosts[src], options.hosts[dst], test, options.pair_timeout);
    });
    for (std::size_t r = 0; r < rounds.size(); ++r) {
      for (std::size_t i = 0; i < rounds[r].size(); ++i) {
        auto [src, dst] = rounds[r][i];
        const PairOutcome& o = outcomes[r][i];
        if (o.value) {
          report.matrix[src][dst] = o.value;
          if (!test.ordered) report.matrix[dst][src] = o.value;
        } else {
          report.failures.push_back({src, dst, o.error});
          if (!test.ordered) {
            report.failures.push_back({dst, src,
                                       "measured as " + options.hosts[src].name + " -> " +
                                           options.hosts[dst].name + ": " + o.error});
          }
        }
      }
    }
    std::sort(report.failures.begin(), report.failures.end(), [](const auto& a, const auto& b) {
      return std::pair(a.source, a.destination) < std::pair(b.source, b.destination);
    });

    OutlierOptions outlier_options;
    outlier_options.better = test.better;
    outlier_options.threshold = options.outlier_threshold;
    FABRIC_ASSIGN_OR_RETURN(
        report.outliers,
        find_outliers(report.matrix, outlier_options).context("finding outliers in " + test.name));
    if (options.retest) {
      // One at a time: a retest must not share a NIC with another.
      std::size_t count = 0;
      for (const auto& cell : report.outliers.cells) {
        // A symmetric test measured the pair once; retest it once.
        if (!test.ordered && cell.source > cell.destination &&
            std::any_of(report.outliers.cells.begin(), report.outliers.cells.end(),
                        [&](const auto& c) {
                          return c.source == cell.destination && c.destination == cell.source;
                        })) {
          continue;
        }
        ++count;
        const MeshHost& src = options.hosts[cell.source];
        const MeshHost& dst = options.hosts[cell.destination];
        tell({&test, count, report.outliers.cells.size(), &src, &dst, true});
        PairOutcome again = runner(src, dst, test, options.pair_timeout);
        report.retests.push_back({cell.source, cell.destination, again.value, again.error});
      }
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

std::string render_mesh_reports_json(const std::vector<MeshReport>& reports, bool pretty) {
  static const std::vector<std::string> no_hosts;
  return render_mesh_document(
      reports.empty() ? no_hosts : reports.front().hosts, reports.size(),
      [&](json::Writer& w, std::size_t t) { write_mesh_json(w, reports[t]); }, pretty);
}

std::string per_test_path(const std::string& path, const std::string& test, bool several) {
  if (!several) return path;
  auto slash = path.rfind('/');
  auto dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return path + "-" + test;
  }
  return path.substr(0, dot) + "-" + test + path.substr(dot);
}

} // namespace fabric::probes
