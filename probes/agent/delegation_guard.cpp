#include "probes/agent/delegation_guard.h"

#include "probes/agent/protocol.h"
#include "probes/agent/session.h"

namespace fabric::probes {

Result<std::string> verify_agent_target(const Endpoint& target, const Token* token,
                                           std::chrono::milliseconds timeout) {
  FABRIC_ASSIGN_OR_RETURN(
      Session session, connect_session(target.host, target.port, kPingTest, "{}", timeout, token));
  FABRIC_TRY(expect_message(session.channel, "result", timeout)
                 .context("ping session with " + session.agent));
  std::string address = peer_host_text(session.channel.fd());
  if (address.empty()) {
    return Error(ErrorCode::kSystem, "ping session with " + session.agent,
                 "the connected socket has no peer address");
  }
  return address;
}

Error delegation_refused(std::string_view agent_hostname, std::string_view peer) {
  return Error(ErrorCode::kPermission, "run",
               "the agent on " + std::string(agent_hostname) + " runs tests only against " +
                   "fabric-probe agents, and none completed a handshake at " + std::string(peer) +
                   " (this agent does not say what else is there; its log does)");
}

} // namespace fabric::probes
