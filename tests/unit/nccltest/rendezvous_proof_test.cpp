// The rendezvous' proofs on the wire: known answers from `openssl dgst -sha256 -hmac`, so that
// ranks of different builds keep agreeing, and no proof of the probe agent's serves here.
#include <gtest/gtest.h>

#include "nccltest/rendezvous_auth.h"

namespace fabric::nccltest {
namespace {

constexpr const char* kZeroNonce =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr const char* kRankNonce =
    "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
constexpr const char* kHello = R"({"type":"hello"})";

// printf 'fabric-nccltest/2 rank\n%s\n%s\n%s' ZERO_NONCE RANK_NONCE HELLO |
//   openssl dgst -sha256 -hmac 0123456789abcdef0123456789abcdef
TEST(RendezvousProof, EachSidesProofIsTheKnownAnswer) {
  auto token = probes::Token::from_text("0123456789abcdef0123456789abcdef", "test token");
  ASSERT_TRUE(token.ok()) << token.error().message();
  const std::string rank = "a0ab6502abe5091199c69d12da7716f86f00530270ef94cc32141f5525b193ff";
  const std::string zero = "2752cbc6d6fde4f82be8039d5ccebf50a5c85c038523d9aefcc85457c1034da5";
  auto made = rendezvous_proof(*token, RendezvousSide::kRank, kZeroNonce, kRankNonce, kHello);
  ASSERT_TRUE(made.ok()) << made.error().message();
  EXPECT_EQ(*made, rank);
  made = rendezvous_proof(*token, RendezvousSide::kRankZero, kZeroNonce, kRankNonce, kHello);
  ASSERT_TRUE(made.ok()) << made.error().message();
  EXPECT_EQ(*made, zero);
  EXPECT_TRUE(
      rendezvous_proof_ok(*token, RendezvousSide::kRank, kZeroNonce, kRankNonce, kHello, rank));
  EXPECT_FALSE(
      rendezvous_proof_ok(*token, RendezvousSide::kRankZero, kZeroNonce, kRankNonce, kHello, rank))
      << "a rank's proof replayed as rank 0's";
  // The probe agent's client proof over the same nonces and hello (auth_proof_test.cpp).
  EXPECT_FALSE(
      rendezvous_proof_ok(*token, RendezvousSide::kRank, kZeroNonce, kRankNonce, kHello,
                          "896994f43c79c65975a444e78af87054e6671a79ce20f770cec25ab15c2e8216"));
}

} // namespace
} // namespace fabric::nccltest
