// The client side of the agent protocol: connect, say hello, check the welcome. What
// follows belongs to the test the session was opened for.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/fd.h"
#include "common/result.h"
#include "libs/agent_channel/auth.h"
#include "libs/agent_channel/channel.h"
#include "probes/agent/protocol.h"

namespace fabric::probes {

struct Session {
  Channel channel;
  Welcome welcome;
  std::string agent; // "HOST:PORT" as the user named it
};

// Connects to the agent at host:port and opens a session for `test` with `params_json`
// (a JSON object). `timeout` bounds the name lookup, the connect and each wait for the
// agent's answer. When the agent asks for a token, `token` answers its challenge (and the
// agent must prove it holds the same); an agent that asks for none is used without.
// Errors say what is wrong in the user's terms: nothing listening (ECONNREFUSED, with the
// command that starts an agent), no answer, not a fabric-probe agent, another protocol
// version, busy, unknown test, refused (address, token, limits).
Result<Session> connect_session(const std::string& host, uint16_t port, std::string_view test,
                                std::string_view params_json, std::chrono::milliseconds timeout,
                                const Token* token = nullptr);

// connect_session() for callers that only need the channel.
Result<Channel> open_session(const std::string& host, uint16_t port, std::string_view test,
                             std::string_view params_json, std::chrono::milliseconds timeout,
                             const Token* token = nullptr);

// Opens a data connection for a session that announced `cookie` (AgentSession::
// accept_streams): connects to the same agent port and sends the "attach" hello. The
// socket carries raw test data from then on.
Result<UniqueFd> open_data_connection(const std::string& host, uint16_t port,
                                      std::string_view cookie, std::size_t stream,
                                      std::chrono::milliseconds timeout);

// Writes one framed message on a socket that is not (or no longer) a Channel, within
// `timeout`: the attach hello on a data connection.
Result<void> send_frame(int fd, std::string_view json_text, std::chrono::milliseconds timeout);

} // namespace fabric::probes
