// rdma_probe.h in a build without libibverbs: every entry point says so (exit 4), and the
// agent still answers clients of these tests with that message.
#include "probes/agent/agent.h"
#include "probes/rdma/rdma_probe.h"

namespace fabric::probes {
namespace {

Error not_built(const char* test) {
  return Error(ErrorCode::kNotBuilt, test,
               "this fabric-probe was built without RDMA support (libibverbs, librdmacm)")
      .with_hint("rebuild with -DWITH_VERBS=ON and the rdma-core development packages");
}

} // namespace

Result<RdmaBwReport> run_rdma_bw_client(Channel&, const RdmaOptions&, const RdmaAgentInfo&) {
  return not_built(kRdmaBwTest);
}
Result<RdmaLatReport> run_rdma_lat_client(Channel&, const RdmaOptions&, const RdmaAgentInfo&) {
  return not_built(kRdmaLatTest);
}
Result<RdmaBwReport> run_rdma_bw(const RdmaOptions&) {
  return not_built(kRdmaBwTest);
}
Result<RdmaLatReport> run_rdma_lat(const RdmaOptions&) {
  return not_built(kRdmaLatTest);
}
Result<void> serve_rdma_bw(AgentSession&, const rapidjson::Value&) {
  return not_built(kRdmaBwTest);
}
Result<void> serve_rdma_lat(AgentSession&, const rapidjson::Value&) {
  return not_built(kRdmaLatTest);
}
Result<std::string> run_rdma_bw_report(const std::string&, uint16_t, const rapidjson::Value&,
                                       const Token*) {
  return not_built(kRdmaBwTest);
}
Result<std::string> run_rdma_lat_report(const std::string&, uint16_t, const rapidjson::Value&,
                                        const Token*) {
  return not_built(kRdmaLatTest);
}

void register_rdma_tests(Agent& agent) {
  agent.register_session_test(kRdmaBwTest, serve_rdma_bw, rdma_bw_demand);
  agent.register_session_test(kRdmaLatTest, serve_rdma_lat, rdma_lat_demand);
  agent.register_runner(kRdmaBwTest, run_rdma_bw_report);
  agent.register_runner(kRdmaLatTest, run_rdma_lat_report);
}

} // namespace fabric::probes
