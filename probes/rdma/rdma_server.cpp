// The agent's sides of rdma_bw and rdma_lat (declared in rdma_probe.h): accept the
// client's connection, then serve one run per message size until the client finishes, and
// answer with this side's counter deltas.
#include "common/json.h"
#include "probes/agent/agent.h"
#include "probes/agent/protocol.h"
#include "probes/rdma/rdma_bw.h"
#include "probes/rdma/rdma_lat.h"
#include "probes/rdma/rdma_link.h"
#include "probes/rdma/rdma_probe.h"

namespace fabric::probes {
namespace {

// The agent sends an error's message() to the client; the likely cause travels in it.
Error with_hint_in_message(Error e) {
  if (e.hint().empty()) return e;
  return Error(e.code(), e.message() + " (" + e.hint() + ")");
}

std::string counters_json(const std::optional<CounterSnapshot>& before,
                          const std::optional<CounterSnapshot>& after) {
  if (!before || !after) return "null";
  json::Writer w(false);
  write_counters_json(w, delta(*before, *after));
  std::string text = w.str();
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

// Waits for the client's next "rdma_run" (or its "rdma_finish": nullopt).
Result<std::optional<RunRequest>> next_run(Channel& channel, const RdmaOptions& o,
                                           std::chrono::milliseconds wait) {
  FABRIC_ASSIGN_OR_RETURN(auto msg, channel.receive(wait));
  const std::string_view type = message_type(msg);
  if (type == kMsgFinish) return std::optional<RunRequest>();
  if (type != kMsgRun) return unexpected_message(msg, kMsgRun, channel.peer_name());
  FABRIC_ASSIGN_OR_RETURN(RunRequest run, decode_run(msg));
  if (run.size > o.max_size()) {
    return Error(ErrorCode::kDecode, "rdma_run.size",
                 std::to_string(run.size) + " bytes is larger than the buffers set up for " +
                     std::to_string(o.max_size()));
  }
  if ((run.iters == 0) != o.duration.has_value()) {
    return Error(ErrorCode::kDecode, "rdma_run", "iterations or duration differ from the hello's");
  }
  return std::optional<RunRequest>(run);
}

Result<void> serve_bw(AgentSession& session, const rapidjson::Value& params) {
  Channel& channel = session.channel();
  FABRIC_ASSIGN_OR_RETURN(RdmaOptions o, rdma_options_from_params(RdmaTest::kBandwidth, params));
  FABRIC_ASSIGN_OR_RETURN(auto link, accept_server_link(channel, o));
  const auto before = snapshot_counters(*link);
  std::chrono::milliseconds wait = o.timeout;
  for (;;) {
    FABRIC_ASSIGN_OR_RETURN(auto run, next_run(channel, o, wait));
    if (!run) break;
    BwPhase phase;
    phase.op = o.op;
    phase.size = run->size;
    phase.iters = run->iters;
    phase.duration = std::chrono::nanoseconds(static_cast<int64_t>(run->duration_s * 1e9));
    phase.tx_depth = o.tx_depth;
    phase.send = o.bidir;
    phase.receive = o.op == RdmaOp::kSend;
    phase.stall_timeout = o.timeout;
    phase.cut = &session.cut_flag();
    FABRIC_TRY(channel.send(encode_simple(kMsgReady), o.timeout));
    SideStats mine;
    if (phase.send || phase.receive) {
      FABRIC_ASSIGN_OR_RETURN(mine,
                              run_bw_phase(*link->resources, link->remote, phase, link->receives));
    }
    FABRIC_TRY(channel.send(encode_done(mine), o.timeout));
    // A one-sided run goes on at the client after this side said it is done.
    wait = phase_bound(o, run->size);
  }
  const auto after = snapshot_counters(*link);
  return channel.send(encode_result(counters_json(before, after)), o.timeout);
}

Result<void> serve_lat(AgentSession& session, const rapidjson::Value& params) {
  Channel& channel = session.channel();
  FABRIC_ASSIGN_OR_RETURN(RdmaOptions o, rdma_options_from_params(RdmaTest::kLatency, params));
  FABRIC_ASSIGN_OR_RETURN(auto link, accept_server_link(channel, o));
  const auto before = snapshot_counters(*link);
  for (;;) {
    FABRIC_ASSIGN_OR_RETURN(auto run, next_run(channel, o, phase_bound(o, o.max_size())));
    if (!run) break;
    link->resources->clear_remote_halves();
    LatPhase phase;
    phase.op = o.op;
    phase.size = run->size;
    phase.iters = run->iters;
    phase.stall_timeout = o.timeout;
    phase.cut = &session.cut_flag();
    FABRIC_TRY(channel.send(encode_simple(kMsgReady), o.timeout));
    FABRIC_ASSIGN_OR_RETURN(uint64_t answered,
                            run_lat_server(*link->resources, link->remote, phase, link->receives));
    SideStats stats;
    stats.messages = answered;
    stats.bytes = answered * run->size;
    FABRIC_TRY(channel.send(encode_done(stats), o.timeout));
  }
  const auto after = snapshot_counters(*link);
  return channel.send(encode_result(counters_json(before, after)), o.timeout);
}

} // namespace

Result<void> serve_rdma_bw(AgentSession& session, const rapidjson::Value& params) {
  auto served = serve_bw(session, params);
  if (!served.ok()) return with_hint_in_message(std::move(served).error());
  return Ok();
}

Result<void> serve_rdma_lat(AgentSession& session, const rapidjson::Value& params) {
  auto served = serve_lat(session, params);
  if (!served.ok()) return with_hint_in_message(std::move(served).error());
  return Ok();
}

void register_rdma_tests(Agent& agent) {
  agent.register_session_test(kRdmaBwTest, serve_rdma_bw, rdma_bw_demand);
  agent.register_session_test(kRdmaLatTest, serve_rdma_lat, rdma_lat_demand);
  agent.register_runner(kRdmaBwTest, run_rdma_bw_report);
  agent.register_runner(kRdmaLatTest, run_rdma_lat_report);
}

} // namespace fabric::probes
