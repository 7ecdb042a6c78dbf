// The agent handshake's proofs on the wire: known answers from `openssl dgst -sha256 -hmac`,
// so that a client and an agent of different builds keep agreeing.
#include <gtest/gtest.h>

#include "libs/agent_channel/auth.h"

namespace fabric::probes {
namespace {

constexpr const char* kAgentNonce =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr const char* kClientNonce =
    "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
constexpr const char* kHello = R"({"type":"hello"})";

// printf 'fabric-probe/2 client\n%s\n%s\n%s' AGENT_NONCE CLIENT_NONCE HELLO |
//   openssl dgst -sha256 -hmac 0123456789abcdef0123456789abcdef
TEST(ProbeAuthProof, EachSidesProofIsTheKnownAnswer) {
  auto token = Token::from_text("0123456789abcdef0123456789abcdef", "test token");
  ASSERT_TRUE(token.ok()) << token.error().message();
  const std::string client = "896994f43c79c65975a444e78af87054e6671a79ce20f770cec25ab15c2e8216";
  const std::string agent = "2eeb37c581ab45fcdb657614a2a39cd0e2adb3168bf752a58d6f4ff710e4c7a0";
  auto made = make_proof(*token, ProofSide::kClient, kAgentNonce, kClientNonce, kHello);
  ASSERT_TRUE(made.ok()) << made.error().message();
  EXPECT_EQ(*made, client);
  made = make_proof(*token, ProofSide::kAgent, kAgentNonce, kClientNonce, kHello);
  ASSERT_TRUE(made.ok()) << made.error().message();
  EXPECT_EQ(*made, agent);
  EXPECT_TRUE(check_proof(*token, ProofSide::kClient, kAgentNonce, kClientNonce, kHello, client));
  EXPECT_FALSE(check_proof(*token, ProofSide::kAgent, kAgentNonce, kClientNonce, kHello, client))
      << "a client's proof replayed as the agent's";
}

} // namespace
} // namespace fabric::probes
