// The agent protocol's handshake: the messages a client and the agent exchange before a
// test owns the channel, and the rules for refusing a peer.
//
//   client -> agent  {"type":"hello","protocol":"fabric-probe","version":2,"test":T,
//                     "params":{},"nonce":N}
//   only when the agent has a token (auth.h):
//   agent -> client  {"type":"challenge","version":2,"nonce":A}
//   client -> agent  {"type":"auth","proof":P}
//   agent -> client  {"type":"welcome","version":2,"agent":"...","hostname":"...","proof":Q}
//                 or {"type":"error","code":C,"message":"...","version":2}
//
// Versions must match exactly; each side refuses the other with a message naming both
// versions. After "welcome" the channel belongs to the test, which ends with a
// {"type":"result",...} or an error message. Version 2 added the nonce, the challenge and
// the proofs.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "common/error.h"
#include "common/result.h"
#include "libs/agent_channel/channel.h"

namespace fabric::probes {

inline constexpr const char* kProtocolName = "fabric-probe";
inline constexpr int kProtocolVersion = 2;
inline constexpr uint16_t kDefaultAgentPort = 18515; // perftest's default port

// A client's --port: the agent's port for hosts named without one; kDefaultAgentPort when
// the flag was not given.
Result<uint16_t> parse_agent_port(const std::optional<std::string>& flag);

// Test names the agent dispatches on. "attach" is not a test: it joins a data connection
// to a running session (see AgentSession::accept_streams).
inline constexpr const char* kRunTest = "run";
inline constexpr const char* kAttachTest = "attach";
// A session that only completes the handshake and ends with an empty result: how an agent
// checks that another agent answers at a host:port before it runs a test against it.
inline constexpr const char* kPingTest = "ping";

// Wire error codes, beyond the names of ErrorCode (error_code_name()).
inline constexpr const char* kErrorBusy = "busy";
inline constexpr const char* kErrorUnknownTest = "unknown_test";
inline constexpr const char* kErrorBadRequest = "bad_request";
inline constexpr const char* kErrorIncompatibleVersion = "incompatible_version";

inline constexpr const char* kMsgChallenge = "challenge";
inline constexpr const char* kMsgAuth = "auth";

struct Hello {
  int version = kProtocolVersion;
  std::string test;
  std::string params_json = "{}"; // the params object as compact JSON text
  std::string nonce;              // the client's nonce; "" on a data connection's hello
};

struct Welcome {
  int version = kProtocolVersion;
  std::string agent;    // the agent's version text
  std::string hostname; // the agent host's name
  std::string proof;    // the agent's proof of the token; "" when it has none
};

// Builders. `params_json` must be a JSON object (checked by make_hello).
Result<std::string> make_hello(std::string_view test, std::string_view params_json,
                               std::string_view nonce = "", int version = kProtocolVersion);
std::string make_challenge(std::string_view agent_nonce);
std::string make_auth(std::string_view proof);
std::string make_welcome(const Welcome& welcome);
std::string make_error_message(std::string_view code, std::string_view message);
// An Error as a wire error: the code is error_code_name(), the message its message().
std::string make_error_message(const Error& error);

// Parses a hello on the agent's side. Errors: kIncompatibleVersion for another protocol
// version (the message names both), kDecode for anything that is not a fabric-probe hello.
Result<Hello> parse_hello(const rapidjson::Value& message);

// The agent's nonce from a challenge, and the client's proof from an auth message; kDecode
// for anything else.
Result<std::string> parse_challenge(const rapidjson::Value& message);
Result<std::string> parse_auth(const rapidjson::Value& message);

// The wire code answering an error from parse_hello(): incompatible_version or bad_request.
std::string_view wire_code_for(const Error& error);

// Parses the agent's answer to a hello on the client's side: a welcome of the same
// version, or an Error made from the agent's refusal. `agent` ("HOST:PORT") names the
// agent in messages.
Result<Welcome> parse_welcome(const rapidjson::Value& message, std::string_view agent);

// Turns a {"type":"error"} message from a peer into an Error (busy -> kTryAgain,
// unknown_test -> kUnsupported, other ErrorCode names -> that code, else kSystem).
Error error_from_message(const rapidjson::Value& message, std::string_view peer);

// "type" of a message, or "" when it has none.
std::string_view message_type(const rapidjson::Value& message);

// Reads an error message when `message` is one; for callers that wait for a given type:
// returns the peer's error, or a kDecode error naming what was expected instead.
Error unexpected_message(const rapidjson::Value& message, std::string_view expected,
                         std::string_view peer);

// Receives the next message, which must be of `type`: a peer's {"type":"error"} becomes
// that error, anything else a kDecode error naming what was expected.
Result<rapidjson::Document> expect_message(Channel& channel, std::string_view type,
                                           std::chrono::milliseconds timeout);

} // namespace fabric::probes
