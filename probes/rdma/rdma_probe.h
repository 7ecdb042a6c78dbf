// fabric-probe's RDMA tests, "rdma_bw" and "rdma_lat": the client sides (`fabric-probe bw`
// and `lat`), the agent's server sides, and the runners the agent uses for mesh
// delegation. The message flow is in rdma_exchange.h; the engines in rdma_bw.h and
// rdma_lat.h.
//
// In a build without libibverbs every entry point answers kNotBuilt (exit 4).
#pragma once

#include <cstdint>
#include <string>

#include <rapidjson/document.h>

#include "common/result.h"
#include "libs/agent_channel/channel.h"
#include "probes/rdma/rdma_options.h"
#include "probes/rdma/rdma_report.h"

namespace fabric::probes {

class Agent;
class AgentSession;

inline constexpr const char* kRdmaBwTest = "rdma_bw";
inline constexpr const char* kRdmaLatTest = "rdma_lat";

// The client side on a channel the agent has welcomed (tests pass one end of
// make_channel_pair() and run the server side on the other).
Result<RdmaBwReport> run_rdma_bw_client(Channel& channel, const RdmaOptions& options,
                                        const RdmaAgentInfo& agent);
Result<RdmaLatReport> run_rdma_lat_client(Channel& channel, const RdmaOptions& options,
                                          const RdmaAgentInfo& agent);

// The whole client: opens the session at options.host:options.agent_port, runs, and for
// bw evaluates --min-bw / --min-bw-pct into the report (report.threshold).
Result<RdmaBwReport> run_rdma_bw(const RdmaOptions& options);
Result<RdmaLatReport> run_rdma_lat(const RdmaOptions& options);

// The agent's side of one session; `params` is the hello's params object.
Result<void> serve_rdma_bw(AgentSession& session, const rapidjson::Value& params);
Result<void> serve_rdma_lat(AgentSession& session, const rapidjson::Value& params);

// Mesh delegation: runs the client side against host:port with `params` (the same object
// as the hello's), presenting `token` when that agent asks, and returns the report as a
// JSON document.
Result<std::string> run_rdma_bw_report(const std::string& host, uint16_t port,
                                       const rapidjson::Value& params, const Token* token);
Result<std::string> run_rdma_lat_report(const std::string& host, uint16_t port,
                                        const rapidjson::Value& params, const Token* token);

// Registers both tests' server sides and runners with the agent.
void register_rdma_tests(Agent& agent);

} // namespace fabric::probes
