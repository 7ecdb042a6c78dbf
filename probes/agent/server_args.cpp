#include "probes/agent/server_args.h"

#include <chrono>

#include "common/units.h"
#include "libs/agent_channel/auth.h"
#include "probes/agent/agent_access.h"

namespace fabric::probes {

Result<AgentOptions> make_agent_options(const ServerArgs& args) {
  AgentOptions o;
  o.bind_address = args.bind;
  if (args.port) {
    FABRIC_ASSIGN_OR_RETURN(uint64_t port, units::parse_uint(*args.port, "--port", 0, 65535));
    o.port = static_cast<uint16_t>(port);
  }
  if (args.max_sessions) {
    FABRIC_ASSIGN_OR_RETURN(o.max_sessions,
                            units::parse_uint(*args.max_sessions, "--max-sessions", 1, 4096));
  }
  auto millis = [](std::chrono::nanoseconds d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d);
  };
  if (args.handshake_timeout) {
    FABRIC_ASSIGN_OR_RETURN(auto d,
                            units::parse_duration(*args.handshake_timeout, "--handshake-timeout"));
    o.handshake_timeout = millis(d);
  }
  if (args.stop_grace) {
    FABRIC_ASSIGN_OR_RETURN(auto d, units::parse_duration(*args.stop_grace, "--stop-grace"));
    o.stop_grace = millis(d);
  }
  if (o.handshake_timeout.count() <= 0) {
    return Error(ErrorCode::kInvalidArgument, "--handshake-timeout", "must be positive");
  }
  for (const auto& cidr : args.allow) {
    FABRIC_ASSIGN_OR_RETURN(Cidr parsed, parse_cidr(cidr, "--allow"));
    o.allow.push_back(parsed);
  }
  FABRIC_ASSIGN_OR_RETURN(o.token, load_token(args.token_file));
  ClientLimits& limits = o.limits;
  if (args.max_client_sessions) {
    FABRIC_ASSIGN_OR_RETURN(
        limits.max_sessions,
        units::parse_uint(*args.max_client_sessions, "--max-client-sessions", 1, 4096));
  }
  if (args.max_message_size) {
    FABRIC_ASSIGN_OR_RETURN(limits.max_message_bytes,
                            units::parse_size(*args.max_message_size, "--max-message-size"));
  }
  if (args.max_client_memory) {
    FABRIC_ASSIGN_OR_RETURN(limits.max_memory_bytes,
                            units::parse_size(*args.max_client_memory, "--max-client-memory"));
  }
  if (args.max_session_duration) {
    FABRIC_ASSIGN_OR_RETURN(
        auto d, units::parse_duration(*args.max_session_duration, "--max-session-duration"));
    limits.max_duration = std::chrono::duration_cast<std::chrono::seconds>(d);
    if (limits.max_duration.count() < 1) {
      return Error(ErrorCode::kInvalidArgument, "--max-session-duration", "must be at least 1 s");
    }
  }
  return o;
}

} // namespace fabric::probes
