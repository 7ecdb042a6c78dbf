// The client sides of rdma_bw and rdma_lat (declared in rdma_probe.h): connect, run every
// message size with the agent in step, collect both sides' counter deltas, and build the
// report.
#include <algorithm>
#include <thread>

#include "common/units.h"
#include "probes/agent/protocol.h"
#include "probes/agent/session.h"
#include "probes/rdma/rdma_bw.h"
#include "probes/rdma/rdma_lat.h"
#include "probes/rdma/rdma_link.h"
#include "probes/rdma/rdma_probe.h"

namespace fabric::probes {
namespace {

// "rdma_ready" woke this thread synchronously from the agent's, and the scheduler placed
// it on the CPU of the agent's thread that sent it. When both ends run on one host
// (soft-RoCE, or a loopback test on a node) both then busy-poll on that one CPU and every
// round trip waits for a scheduler tick (4 ms at HZ=250) instead of microseconds. A short
// sleep ends in a timer wakeup, which puts this thread on an idle CPU when its own is busy.
// Outside the measured loop; costs nothing measurable elsewhere.
void leave_the_agents_cpu() {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

RunRequest run_request(const RdmaOptions& o, uint64_t size) {
  RunRequest run;
  run.size = size;
  run.iters = o.iters;
  run.duration_s = o.duration ? units::seconds(*o.duration) : 0.0;
  return run;
}

// The agent's counter deltas from its "result" message; nullopt when it had none.
std::optional<CounterDelta> remote_counters(const rapidjson::Value& result) {
  auto it = result.FindMember("counters");
  if (it == result.MemberEnd() || !it->value.IsObject()) return std::nullopt;
  auto parsed = parse_counters_json(it->value, "result.counters");
  if (!parsed.ok()) return std::nullopt;
  return std::move(*parsed);
}

// Ends the session: counters after the last run, the finish message, the agent's result.
Result<RdmaCounters> finish_session(Channel& channel, const RdmaLink& link,
                                    const std::optional<CounterSnapshot>& before,
                                    std::chrono::milliseconds timeout) {
  RdmaCounters counters;
  auto after = snapshot_counters(link);
  if (before && after) counters.local = delta(*before, *after);
  FABRIC_TRY(channel.send(encode_simple(kMsgFinish), timeout));
  FABRIC_ASSIGN_OR_RETURN(auto result, expect_message(channel, kMsgResult, timeout));
  counters.remote = remote_counters(result);
  return counters;
}

} // namespace

Result<RdmaBwReport> run_rdma_bw_client(Channel& channel, const RdmaOptions& o,
                                        const RdmaAgentInfo& agent) {
  FABRIC_ASSIGN_OR_RETURN(auto link, connect_client_link(channel, o));
  RdmaBwReport report;
  report.agent = agent;
  report.options = o;
  report.connection = link->info;
  report.link_speed_gbps = link->resources->link_speed_gbps();
  const auto before = snapshot_counters(*link);
  for (uint64_t size : o.sizes) {
    const std::string what = "rdma_bw " + units::format_size(size);
    FABRIC_TRY(channel.send(encode_run(run_request(o, size)), o.timeout));
    FABRIC_TRY(expect_message(channel, kMsgReady, o.timeout).context(what));
    leave_the_agents_cpu();
    BwPhase phase;
    phase.op = o.op;
    phase.size = size;
    phase.iters = o.iters;
    phase.duration = o.duration.value_or(std::chrono::nanoseconds(0));
    phase.tx_depth = o.tx_depth;
    phase.send = true;
    phase.receive = o.op == RdmaOp::kSend && o.bidir;
    phase.stall_timeout = o.timeout;
    FABRIC_ASSIGN_OR_RETURN(
        SideStats mine,
        run_bw_phase(*link->resources, link->remote, phase, link->receives).context(what));
    FABRIC_ASSIGN_OR_RETURN(auto done,
                            expect_message(channel, kMsgDone, phase_bound(o, size)).context(what));
    FABRIC_ASSIGN_OR_RETURN(SideStats theirs, decode_done(done));
    BwSizeResult result;
    result.size = size;
    result.iterations = o.iters != 0 ? o.iters : mine.messages / std::max<uint32_t>(o.qps, 1);
    result.local = mine;
    if (o.bidir) result.remote = theirs;
    report.results.push_back(result);
  }
  FABRIC_ASSIGN_OR_RETURN(report.counters, finish_session(channel, *link, before, o.timeout));
  return report;
}

Result<RdmaLatReport> run_rdma_lat_client(Channel& channel, const RdmaOptions& o,
                                          const RdmaAgentInfo& agent) {
  FABRIC_ASSIGN_OR_RETURN(auto link, connect_client_link(channel, o));
  RdmaLatReport report;
  report.agent = agent;
  report.options = o;
  report.connection = link->info;
  const auto before = snapshot_counters(*link);
  for (uint64_t size : o.sizes) {
    const std::string what = "rdma_lat " + units::format_size(size);
    // The write test detects arrival by a changing last byte: start from zeros.
    link->resources->clear_remote_halves();
    FABRIC_TRY(channel.send(encode_run(run_request(o, size)), o.timeout));
    FABRIC_TRY(expect_message(channel, kMsgReady, o.timeout).context(what));
    leave_the_agents_cpu();
    LatPhase phase;
    phase.op = o.op;
    phase.size = size;
    phase.iters = o.iters;
    phase.stall_timeout = o.timeout;
    FABRIC_ASSIGN_OR_RETURN(
        std::vector<double> samples,
        run_lat_client(*link->resources, link->remote, phase, link->receives).context(what));
    FABRIC_TRY(expect_message(channel, kMsgDone, o.timeout).context(what));
    LatSizeResult result;
    result.size = size;
    result.iterations = o.iters;
    result.summary = summarize(std::move(samples));
    report.results.push_back(result);
  }
  FABRIC_ASSIGN_OR_RETURN(report.counters, finish_session(channel, *link, before, o.timeout));
  return report;
}

Result<RdmaBwReport> run_rdma_bw(const RdmaOptions& o) {
  FABRIC_ASSIGN_OR_RETURN(Session session,
                          connect_session(o.host, o.agent_port, kRdmaBwTest, rdma_params_json(o),
                                          o.timeout, o.token ? &*o.token : nullptr));
  RdmaAgentInfo agent{session.agent, session.welcome.hostname, session.welcome.agent};
  FABRIC_ASSIGN_OR_RETURN(RdmaBwReport report, run_rdma_bw_client(session.channel, o, agent));
  FABRIC_ASSIGN_OR_RETURN(report.threshold,
                          evaluate_threshold(o, report.results, report.link_speed_gbps));
  return report;
}

Result<RdmaLatReport> run_rdma_lat(const RdmaOptions& o) {
  FABRIC_ASSIGN_OR_RETURN(Session session,
                          connect_session(o.host, o.agent_port, kRdmaLatTest, rdma_params_json(o),
                                          o.timeout, o.token ? &*o.token : nullptr));
  RdmaAgentInfo agent{session.agent, session.welcome.hostname, session.welcome.agent};
  return run_rdma_lat_client(session.channel, o, agent);
}

Result<std::string> run_rdma_bw_report(const std::string& host, uint16_t port,
                                       const rapidjson::Value& params, const Token* token) {
  FABRIC_ASSIGN_OR_RETURN(RdmaOptions o, rdma_options_from_params(RdmaTest::kBandwidth, params));
  o.host = host;
  o.agent_port = port;
  if (token != nullptr) o.token = *token;
  FABRIC_ASSIGN_OR_RETURN(RdmaBwReport report, run_rdma_bw(o));
  return render_rdma_bw_json(report, false);
}

Result<std::string> run_rdma_lat_report(const std::string& host, uint16_t port,
                                        const rapidjson::Value& params, const Token* token) {
  FABRIC_ASSIGN_OR_RETURN(RdmaOptions o, rdma_options_from_params(RdmaTest::kLatency, params));
  o.host = host;
  o.agent_port = port;
  if (token != nullptr) o.token = *token;
  FABRIC_ASSIGN_OR_RETURN(RdmaLatReport report, run_rdma_lat(o));
  return render_rdma_lat_json(report, false);
}

} // namespace fabric::probes
