#include "probes/agent/protocol.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/json.h"
#include "common/units.h"
#include "libs/agent_channel/auth.h"

namespace fabric::probes {

Result<uint16_t> parse_agent_port(const std::optional<std::string>& flag) {
  if (!flag) return kDefaultAgentPort;
  FABRIC_ASSIGN_OR_RETURN(uint64_t port, units::parse_uint(*flag, "--port", 1, 65535));
  return static_cast<uint16_t>(port);
}

namespace {

using StringWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void write_string(StringWriter& w, std::string_view key, std::string_view value) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

std::string version_mismatch(std::string_view them, int their_version, std::string_view us) {
  return std::string(them) + " speaks " + kProtocolName + " protocol " +
         std::to_string(their_version) + ", " + std::string(us) + " speaks " +
         std::to_string(kProtocolVersion) + ": upgrade one side";
}

// The agent's version as its error message carries it; 0 when absent.
int version_field(const rapidjson::Value& message) {
  if (!message.IsObject()) return 0;
  auto it = message.FindMember("version");
  return it != message.MemberEnd() && it->value.IsInt() ? it->value.GetInt() : 0;
}

std::string string_field(const rapidjson::Value& message, const char* name) {
  if (!message.IsObject()) return "";
  auto it = message.FindMember(name);
  return it != message.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

ErrorCode code_for_wire(std::string_view code) {
  if (code == kErrorBusy) return ErrorCode::kTryAgain;
  if (code == kErrorUnknownTest) return ErrorCode::kUnsupported;
  if (code == kErrorBadRequest) return ErrorCode::kDecode;
  for (int c = 0; c <= static_cast<int>(ErrorCode::kInternal); ++c) {
    if (error_code_name(static_cast<ErrorCode>(c)) == code) return static_cast<ErrorCode>(c);
  }
  return ErrorCode::kSystem;
}

} // namespace

Result<std::string> make_hello(std::string_view test, std::string_view params_json,
                               std::string_view nonce, int version) {
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document params, json::parse(params_json, "test params"));
  if (!params.IsObject()) {
    return Error(ErrorCode::kInvalidArgument, "test params", "must be a JSON object");
  }
  rapidjson::StringBuffer buffer;
  StringWriter w(buffer);
  w.StartObject();
  write_string(w, "type", "hello");
  write_string(w, "protocol", kProtocolName);
  w.Key("version");
  w.Int(version);
  write_string(w, "test", test);
  w.Key("params");
  params.Accept(w);
  if (!nonce.empty()) write_string(w, "nonce", nonce);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string make_challenge(std::string_view agent_nonce) {
  rapidjson::StringBuffer buffer;
  StringWriter w(buffer);
  w.StartObject();
  write_string(w, "type", kMsgChallenge);
  w.Key("version");
  w.Int(kProtocolVersion);
  write_string(w, "nonce", agent_nonce);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string make_auth(std::string_view proof) {
  rapidjson::StringBuffer buffer;
  StringWriter w(buffer);
  w.StartObject();
  write_string(w, "type", kMsgAuth);
  write_string(w, "proof", proof);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string make_welcome(const Welcome& welcome) {
  rapidjson::StringBuffer buffer;
  StringWriter w(buffer);
  w.StartObject();
  write_string(w, "type", "welcome");
  w.Key("version");
  w.Int(welcome.version);
  write_string(w, "agent", welcome.agent);
  write_string(w, "hostname", welcome.hostname);
  if (!welcome.proof.empty()) write_string(w, "proof", welcome.proof);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string make_error_message(std::string_view code, std::string_view message) {
  rapidjson::StringBuffer buffer;
  StringWriter w(buffer);
  w.StartObject();
  write_string(w, "type", "error");
  write_string(w, "code", code);
  write_string(w, "message", message);
  // Lets a client of another version name both versions in its own message.
  w.Key("version");
  w.Int(kProtocolVersion);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string make_error_message(const Error& error) {
  return make_error_message(error_code_name(error.code()), error.message());
}

Result<Hello> parse_hello(const rapidjson::Value& message) {
  auto not_hello = [](const std::string& why) {
    return Error(ErrorCode::kDecode, "handshake", "expected a fabric-probe hello message: " + why);
  };
  if (!message.IsObject()) return not_hello("the message is not a JSON object");
  if (string_field(message, "protocol") != kProtocolName) {
    return not_hello("\"protocol\" is not \"fabric-probe\"");
  }
  if (message_type(message) != "hello") return not_hello("\"type\" is not \"hello\"");
  auto version = message.FindMember("version");
  if (version == message.MemberEnd() || !version->value.IsInt()) {
    return not_hello("\"version\" must be an integer");
  }
  Hello hello;
  hello.version = version->value.GetInt();
  if (hello.version != kProtocolVersion) {
    return Error(ErrorCode::kIncompatibleVersion, "handshake",
                 version_mismatch("the client", hello.version, "this agent"));
  }
  hello.test = string_field(message, "test");
  if (hello.test.empty()) return not_hello("\"test\" must be a non-empty string");
  auto params = message.FindMember("params");
  if (params != message.MemberEnd()) {
    if (!params->value.IsObject()) return not_hello("\"params\" must be an object");
    hello.params_json = json::to_string(params->value);
  }
  if (message.HasMember("nonce")) {
    hello.nonce = string_field(message, "nonce");
    if (!is_nonce(hello.nonce)) {
      return not_hello("\"nonce\" must be " + std::to_string(2 * kNonceBytes) +
                       " hexadecimal characters");
    }
  }
  return hello;
}

Result<std::string> parse_challenge(const rapidjson::Value& message) {
  std::string nonce = string_field(message, "nonce");
  if (message_type(message) != kMsgChallenge || !is_nonce(nonce)) {
    return Error(ErrorCode::kDecode, "handshake",
                 "expected a challenge with a nonce of " + std::to_string(2 * kNonceBytes) +
                     " hexadecimal characters");
  }
  return nonce;
}

Result<std::string> parse_auth(const rapidjson::Value& message) {
  std::string proof = string_field(message, "proof");
  if (message_type(message) != kMsgAuth || proof.empty()) {
    return Error(ErrorCode::kDecode, "handshake", "expected an auth message with a proof");
  }
  return proof;
}

std::string_view wire_code_for(const Error& error) {
  return error.code() == ErrorCode::kIncompatibleVersion ? kErrorIncompatibleVersion
                                                         : kErrorBadRequest;
}

Result<Welcome> parse_welcome(const rapidjson::Value& message, std::string_view agent) {
  const std::string them = "agent at " + std::string(agent);
  std::string_view type = message_type(message);
  if (type == "error") {
    if (string_field(message, "code") == kErrorIncompatibleVersion) {
      int theirs = version_field(message);
      if (theirs != 0 && theirs != kProtocolVersion) {
        return Error(ErrorCode::kPeerIncompatible, "handshake with " + std::string(agent),
                     version_mismatch(them, theirs, "this client"));
      }
    }
    return error_from_message(message, them);
  }
  if (type != "welcome") {
    return Error(ErrorCode::kDecode, "handshake with " + std::string(agent),
                 "expected a welcome message, got " +
                     (type.empty() ? std::string("a message without a type")
                                   : "\"" + std::string(type) + "\"") +
                     "; is the peer a fabric-probe agent?");
  }
  Welcome welcome;
  welcome.version = version_field(message);
  if (welcome.version != kProtocolVersion) {
    return Error(ErrorCode::kPeerIncompatible, "handshake with " + std::string(agent),
                 version_mismatch(them, welcome.version, "this client"));
  }
  welcome.agent = string_field(message, "agent");
  welcome.hostname = string_field(message, "hostname");
  welcome.proof = string_field(message, "proof");
  return welcome;
}

Error error_from_message(const rapidjson::Value& message, std::string_view peer) {
  std::string code = string_field(message, "code");
  std::string text = string_field(message, "message");
  if (text.empty()) text = "failed without a message";
  Error error(code_for_wire(code), std::string(peer), text);
  if (code == kErrorBusy) {
    error.with_hint("the agent is serving its maximum number of sessions; retry later or "
                    "raise its --max-sessions");
  }
  return error;
}

std::string_view message_type(const rapidjson::Value& message) {
  if (!message.IsObject()) return "";
  auto it = message.FindMember("type");
  if (it == message.MemberEnd() || !it->value.IsString()) return "";
  return std::string_view(it->value.GetString(), it->value.GetStringLength());
}

Error unexpected_message(const rapidjson::Value& message, std::string_view expected,
                         std::string_view peer) {
  std::string_view type = message_type(message);
  if (type == "error") return error_from_message(message, peer);
  return Error(
      ErrorCode::kDecode, std::string(peer),
      "expected a \"" + std::string(expected) + "\" message, got " +
          (type.empty() ? std::string("one without a type") : "\"" + std::string(type) + "\""));
}

Result<rapidjson::Document> expect_message(Channel& channel, std::string_view type,
                                           std::chrono::milliseconds timeout) {
  FABRIC_ASSIGN_OR_RETURN(rapidjson::Document message, channel.receive(timeout));
  if (message_type(message) == type) return message;
  return unexpected_message(message, type, channel.peer_name());
}

} // namespace fabric::probes
