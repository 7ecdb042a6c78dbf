#include "nccltest/rendezvous_auth.h"

#include "common/crypto.h"
#include "common/labelled_proof.h"

namespace fabric::nccltest {
namespace {

// The side's name keeps a rank's proof from being replayed as rank 0's.
std::string_view rendezvous_label(RendezvousSide side) {
  return side == RendezvousSide::kRank ? "fabric-nccltest/2 rank" : "fabric-nccltest/2 rank 0";
}

} // namespace

Result<std::string> rendezvous_proof(const probes::Token& token, RendezvousSide side,
                                     std::string_view zero_nonce, std::string_view rank_nonce,
                                     std::string_view hello_text) {
  return crypto::labelled_proof(token.secret(), rendezvous_label(side), zero_nonce, rank_nonce,
                                hello_text);
}

bool rendezvous_proof_ok(const probes::Token& token, RendezvousSide side,
                         std::string_view zero_nonce, std::string_view rank_nonce,
                         std::string_view hello_text, std::string_view proof) {
  return crypto::labelled_proof_ok(token.secret(), rendezvous_label(side), zero_nonce, rank_nonce,
                                   hello_text, proof);
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
