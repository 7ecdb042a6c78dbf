#include "probes/rdma/rdma_phase_errors.h"

#include "probes/rdma/rdma_triage.h"

namespace fabric::probes {
namespace {

TriageFacts phase_facts(const RdmaResources& r, const RdmaEndpoint& remote) {
  TriageFacts facts;
  facts.device = r.device_name();
  facts.port = r.port();
  facts.peer_ipv4 = remote.gid.ipv4;
  return facts;
}

} // namespace

Error completion_error(const ibv_wc& wc, const RdmaResources& resources, const RdmaEndpoint& remote,
                       const char* queue) {
  TriageFacts facts = phase_facts(resources, remote);
  facts.wc_status = static_cast<int>(wc.status);
  return triage_error(RdmaStep::kDataPhase,
                      std::string(queue) + " completion on QP " + std::to_string(wc.qp_num), 0,
                      facts);
}

Error stall_error(const RdmaResources& resources, const RdmaEndpoint& remote,
                  std::chrono::milliseconds timeout, const std::string& waiting_for) {
  TriageFacts facts = phase_facts(resources, remote);
  facts.stalled = true;
  facts.timeout_text = std::to_string(timeout.count()) + " ms";
  return triage_error(RdmaStep::kDataPhase, waiting_for, 0, facts);
}

Error cut_error(const std::string& what) {
  return Error(ErrorCode::kTryAgain, what, "the agent is stopping: session cut");
}

} // namespace fabric::probes
