// The agent protocol's handshake messages and the host:port syntax, without sockets.
#include <gtest/gtest.h>

#include "common/json.h"
#include "libs/agent_channel/tcp_socket.h"
#include "probes/agent/protocol.h"

namespace fabric::probes {
namespace {

rapidjson::Document parse(const std::string& text) {
  auto doc = json::parse(text, "test message");
  EXPECT_TRUE(doc.ok()) << doc.error().message();
  return doc.ok() ? std::move(*doc) : rapidjson::Document();
}

TEST(ProbeProtocol, HelloRoundTrips) {
  auto hello = make_hello("tcp_bw", R"({"streams":4})");
  ASSERT_TRUE(hello.ok()) << hello.error().message();
  auto doc = parse(*hello);
  EXPECT_STREQ(doc["type"].GetString(), "hello");
  EXPECT_STREQ(doc["protocol"].GetString(), "fabric-probe");
  EXPECT_EQ(doc["version"].GetInt(), kProtocolVersion);
  auto parsed = parse_hello(doc);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->test, "tcp_bw");
  EXPECT_EQ(parsed->params_json, R"({"streams":4})");
}

TEST(ProbeProtocol, HelloCarriesTheClientsNonce) {
  const std::string nonce(64, 'a');
  auto hello = make_hello("rdma_bw", "{}", nonce);
  ASSERT_TRUE(hello.ok());
  auto parsed = parse_hello(parse(*hello));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->nonce, nonce);
  // A data connection's hello has none; a nonce that is not 32 bytes of hex is refused.
  EXPECT_TRUE(parse_hello(parse(*make_hello("attach", "{}")))->nonce.empty());
  for (const std::string& bad : {std::string(63, 'a'), std::string(64, 'g'), std::string("x")}) {
    auto refused = parse_hello(parse(*make_hello("rdma_bw", "{}", bad)));
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.error().message().find("\"nonce\" must be 64 hexadecimal characters"),
              std::string::npos)
        << refused.error().message();
  }
}

TEST(ProbeProtocol, ChallengeAndAuthRoundTrip) {
  const std::string nonce(64, 'b');
  auto challenge = parse_challenge(parse(make_challenge(nonce)));
  ASSERT_TRUE(challenge.ok()) << challenge.error().message();
  EXPECT_EQ(*challenge, nonce);
  EXPECT_EQ(parse(make_challenge(nonce))["version"].GetInt(), kProtocolVersion);
  EXPECT_FALSE(parse_challenge(parse(make_challenge("short"))).ok());
  EXPECT_FALSE(parse_challenge(parse(make_auth("ab"))).ok());

  auto proof = parse_auth(parse(make_auth("c0ffee")));
  ASSERT_TRUE(proof.ok());
  EXPECT_EQ(*proof, "c0ffee");
  EXPECT_FALSE(parse_auth(parse(R"({"type":"auth"})")).ok());
  EXPECT_FALSE(parse_auth(parse(make_challenge(nonce))).ok());

  Welcome proven{kProtocolVersion, "fabric-probe 0.1.0", "node-a", "d00d"};
  auto welcome = parse_welcome(parse(make_welcome(proven)), "node-a:18515");
  ASSERT_TRUE(welcome.ok());
  EXPECT_EQ(welcome->proof, "d00d");
}

TEST(ProbeProtocol, RefusalsForAccessAndLimitsExitTwo) {
  for (const char* code : {"permission", "try_again"}) {
    auto got = parse_welcome(parse(make_error_message(code, "not from 10.0.0.9")), "a:1");
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(exit_status_for(got.error().code()), kExitSystem) << code;
    EXPECT_NE(got.error().message().find("not from 10.0.0.9"), std::string::npos);
  }
}

TEST(ProbeProtocol, HelloParamsMustBeAnObject) {
  auto hello = make_hello("tcp_bw", "[1,2]");
  ASSERT_FALSE(hello.ok());
  EXPECT_NE(hello.error().message().find("must be a JSON object"), std::string::npos);
  EXPECT_FALSE(make_hello("tcp_bw", "{oops").ok());
}

TEST(ProbeProtocol, AgentRefusesAnotherVersionNamingBoth) {
  auto hello = make_hello("tcp_bw", "{}", "", 1);
  ASSERT_TRUE(hello.ok());
  auto parsed = parse_hello(parse(*hello));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code(), ErrorCode::kIncompatibleVersion);
  EXPECT_EQ(wire_code_for(parsed.error()), "incompatible_version");
  EXPECT_NE(parsed.error().message().find(
                "the client speaks fabric-probe protocol 1, this agent speaks 2: upgrade one side"),
            std::string::npos)
      << parsed.error().message();
}

TEST(ProbeProtocol, AgentRefusesWhatIsNotAHello) {
  const char* cases[] = {
      R"([1,2,3])",
      R"({"type":"hello","version":2,"test":"tcp_bw"})",
      R"({"type":"hello","protocol":"iperf3","version":2,"test":"tcp_bw"})",
      R"({"type":"welcome","protocol":"fabric-probe","version":2,"test":"tcp_bw"})",
      R"({"type":"hello","protocol":"fabric-probe","version":"1","test":"tcp_bw"})",
      R"({"type":"hello","protocol":"fabric-probe","version":2})",
      R"({"type":"hello","protocol":"fabric-probe","version":2,"test":"x","params":3})",
  };
  for (const char* text : cases) {
    auto parsed = parse_hello(parse(text));
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().code(), ErrorCode::kDecode) << text;
    EXPECT_EQ(wire_code_for(parsed.error()), "bad_request");
    EXPECT_NE(parsed.error().message().find("expected a fabric-probe hello"), std::string::npos)
        << parsed.error().message();
  }
}

TEST(ProbeProtocol, ClientAcceptsWelcomeOfItsVersion) {
  Welcome sent{kProtocolVersion, "fabric-probe 0.1.0", "node-a", ""};
  auto got = parse_welcome(parse(make_welcome(sent)), "node-a:18515");
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(got->agent, "fabric-probe 0.1.0");
  EXPECT_EQ(got->hostname, "node-a");
}

TEST(ProbeProtocol, ClientRefusesWelcomeOfAnotherVersion) {
  auto got =
      parse_welcome(parse(make_welcome({1, "fabric-probe 0.1", "node-b", ""})), "node-b:18515");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), ErrorCode::kPeerIncompatible);
  EXPECT_NE(got.error().message().find("agent at node-b:18515 speaks fabric-probe protocol 1, "
                                       "this client speaks 2: upgrade one side"),
            std::string::npos)
      << got.error().message();
}

TEST(ProbeProtocol, NewerAgentsRefusalNamesBothVersions) {
  // What an agent of protocol 3 answers this client.
  auto refusal =
      parse(R"({"type":"error","code":"incompatible_version","message":"...","version":3})");
  auto got = parse_welcome(refusal, "[fd00::2]:18515");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), ErrorCode::kPeerIncompatible);
  EXPECT_NE(got.error().message().find("agent at [fd00::2]:18515 speaks fabric-probe protocol 3"),
            std::string::npos)
      << got.error().message();
}

TEST(ProbeProtocol, RefusalsBecomeErrorsWithTheirMeaning) {
  struct Case {
    const char* code;
    ErrorCode expected;
  } cases[] = {
      {"busy", ErrorCode::kTryAgain},        {"unknown_test", ErrorCode::kUnsupported},
      {"bad_request", ErrorCode::kDecode},   {"timeout", ErrorCode::kTimeout},
      {"something_new", ErrorCode::kSystem},
  };
  for (const auto& c : cases) {
    auto got = parse_welcome(parse(make_error_message(c.code, "because")), "a:1");
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().code(), c.expected) << c.code;
    EXPECT_NE(got.error().message().find("because"), std::string::npos);
  }
  auto busy = error_from_message(parse(make_error_message("busy", "full")), "a:1");
  EXPECT_NE(busy.hint().find("--max-sessions"), std::string::npos);
}

TEST(ProbeProtocol, ClientRefusesAnythingElse) {
  auto got = parse_welcome(parse(R"({"hello":"world"})"), "a:1");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), ErrorCode::kDecode);
  EXPECT_NE(got.error().message().find("is the peer a fabric-probe agent?"), std::string::npos);
}

TEST(ProbeProtocol, ErrorMessagesCarryCodeName) {
  Error e(ErrorCode::kTimeout, "waiting", "too slow");
  auto doc = parse(make_error_message(e));
  EXPECT_STREQ(doc["code"].GetString(), "timeout");
  EXPECT_STREQ(doc["message"].GetString(), "waiting: too slow");
  EXPECT_EQ(doc["version"].GetInt(), kProtocolVersion);
}

TEST(ProbeEndpoint, ParsesHostsAndPorts) {
  struct Case {
    const char* text;
    const char* host;
    uint16_t port;
  } cases[] = {
      {"node-a", "node-a", 18515},     {"node-a:9000", "node-a", 9000},
      {"10.0.0.1", "10.0.0.1", 18515}, {"10.0.0.1:1", "10.0.0.1", 1},
      {"fd00::1", "fd00::1", 18515},   {"[fd00::1]", "fd00::1", 18515},
      {"[fd00::1]:7", "fd00::1", 7},   {"[fe80::1%eth0]:7", "fe80::1%eth0", 7},
  };
  for (const auto& c : cases) {
    auto e = parse_endpoint(c.text, 18515);
    ASSERT_TRUE(e.ok()) << c.text << ": " << e.error().message();
    EXPECT_EQ(e->host, c.host) << c.text;
    EXPECT_EQ(e->port, c.port) << c.text;
  }
}

TEST(ProbeEndpoint, RefusesBadSyntaxNamingTheArgument) {
  for (const char* text :
       {"", ":80", "a:", "a:0", "a:70000", "a:x", "[fd00::1", "[fd00::1]x", "[]:80"}) {
    auto e = parse_endpoint(text, 18515, "--hosts");
    ASSERT_FALSE(e.ok()) << text;
    EXPECT_EQ(e.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(e.error().message().rfind("--hosts", 0), 0u) << e.error().message();
  }
}

TEST(ProbeEndpoint, FormatsWithBracketsForIpv6) {
  EXPECT_EQ(format_endpoint("10.0.0.1", 18515), "10.0.0.1:18515");
  EXPECT_EQ(format_endpoint("fd00::1", 18515), "[fd00::1]:18515");
  EXPECT_EQ(format_endpoint("node-a", 1), "node-a:1");
}

} // namespace
} // namespace fabric::probes
