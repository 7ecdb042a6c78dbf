#include "common/labelled_proof.h"

#include "common/crypto.h"

namespace fabric::crypto {

Result<std::string> labelled_proof(std::string_view secret, std::string_view label,
                                   std::string_view first_nonce, std::string_view second_nonce,
                                   std::string_view transcript) {
  std::string message(label);
  message.append("\n").append(first_nonce).append("\n").append(second_nonce).append("\n");
  message.append(transcript);
  FABRIC_ASSIGN_OR_RETURN(std::string mac, hmac_sha256(secret, message));
  return to_hex(mac);
}

bool labelled_proof_ok(std::string_view secret, std::string_view label,
                       std::string_view first_nonce, std::string_view second_nonce,
                       std::string_view transcript, std::string_view proof) {
  auto expected = labelled_proof(secret, label, first_nonce, second_nonce, transcript);
  return expected.ok() && equal_constant_time(*expected, proof);
}

} // namespace fabric::crypto
