// `fabric-probe server`'s flags as the user typed them, and their check into the agent's
// options: every bad value is an error that names its flag (exit 1).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "probes/agent/agent.h"

namespace fabric::probes {

struct ServerArgs {
  std::string bind;
  std::optional<std::string> port;
  std::optional<std::string> max_sessions;
  std::optional<std::string> handshake_timeout;
  std::optional<std::string> stop_grace;
  std::string port_file;
  std::vector<std::string> allow;
  std::optional<std::string> token_file; // else $FABRIC_PROBE_TOKEN_FILE
  std::optional<std::string> max_client_sessions;
  std::optional<std::string> max_message_size;
  std::optional<std::string> max_client_memory;
  std::optional<std::string> max_session_duration;
};

// Reads the token file too: a missing or short token is reported here, before listening.
Result<AgentOptions> make_agent_options(const ServerArgs& args);

} // namespace fabric::probes
