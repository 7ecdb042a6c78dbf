#include "nccltest/rendezvous_auth.h"

#include "common/crypto.h"

namespace fabric::nccltest {
namespace {

std::string rendezvous_proof_input(RendezvousSide side, std::string_view zero_nonce,
                                   std::string_view rank_nonce, std::string_view hello_text) {
  // Nonces are fixed-length hex without newlines, so the fields cannot run into each other;
  // the side's name keeps a rank's proof from being replayed as rank 0's.
  std::string message =
      side == RendezvousSide::kRank ? "fabric-nccltest/2 rank\n" : "fabric-nccltest/2 rank 0\n";
  message.append(zero_nonce).append("\n").append(rank_nonce).append("\n").append(hello_text);
  return message;
}

} // namespace

Result<std::string> rendezvous_proof(const probes::Token& token, RendezvousSide side,
                                     std::string_view zero_nonce, std::string_view rank_nonce,
                                     std::string_view hello_text) {
  FABRIC_ASSIGN_OR_RETURN(
      std::string mac,
      crypto::hmac_sha256(token.secret(),
                          rendezvous_proof_input(side, zero_nonce, rank_nonce, hello_text)));
  return crypto::to_hex(mac);
}

bool rendezvous_proof_ok(const probes::Token& token, RendezvousSide side,
                         std::string_view zero_nonce, std::string_view rank_nonce,
                         std::string_view hello_text, std::string_view proof) {
  auto expected = rendezvous_proof(token, side, zero_nonce, rank_nonce, hello_text);
  return expected.ok() && crypto::equal_constant_time(*expected, proof);
}

Result<std::optional<probes::Token>> rendezvous_token(const char* file_from_env) {
  if (file_from_env == nullptr || *file_from_env == '\0') return std::optional<probes::Token>();
  FABRIC_ASSIGN_OR_RETURN(probes::Token token, probes::Token::read_file(file_from_env));
  return std::optional<probes::Token>(std::move(token));
}

Result<probes::Token> random_rendezvous_token() {
  FABRIC_ASSIGN_OR_RETURN(std::string bytes, crypto::random_bytes(32));
  std::string text = crypto::to_hex(bytes);
  crypto::wipe(bytes);
  auto token = probes::Token::from_text(text, "a token of this run's own");
  crypto::wipe(text);
  return token;
}

} // namespace fabric::nccltest
