// What the agent checks before it runs a test's client side against a host that a client
// named ("run" delegation, which the mesh uses). Without the check, anyone the agent
// serves could make it connect to any host:port and read what answered there in the
// error sent back: a banner, "connection refused", "no answer".
//
// The agent first opens a "ping" session to the target, presenting its own token: only a
// peer that completes the handshake (and proves the same token, when the agent has one)
// is an agent. The test then runs against the address that answered, so that a name
// which resolves elsewhere the second time cannot redirect it. Whatever fails before the
// handshake completes ends in one refusal that names only what the client sent; the
// agent's own log keeps the reason.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/result.h"
#include "libs/agent_channel/auth.h"
#include "libs/agent_channel/tcp_socket.h"

namespace fabric::probes {

// Opens and completes a "ping" session with the agent at `target`, and gives the numeric
// address that answered ("10.0.0.2", "fe80::2%3"). The error says what went wrong, for the
// agent's log only: it may describe a program that is not an agent.
Result<std::string> verify_agent_target(const Endpoint& target, const Token* token,
                                           std::chrono::milliseconds timeout);

// The one answer a client gets when verify_agent_target() failed, whatever the reason:
// `agent_hostname` is this agent's, `peer` the target as the client wrote it.
Error delegation_refused(std::string_view agent_hostname, std::string_view peer);

} // namespace fabric::probes
