// The proof of a shared secret in a challenge-response handshake, for every protocol that
// has one (the probe agent's, fabric-nccltest's rendezvous): each side sends a proof over both
// sides' fresh nonces, so a proof serves once, and over a label naming the protocol and the
// side, so that no proof of one protocol or side serves another.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace fabric::crypto {

// Lower-case hex HMAC-SHA256 under `secret` of the label, the two nonces in the order the
// protocol fixes, and `transcript` (the message the proof vouches for, exactly as framed),
// joined by newlines. The nonces must be fixed-length hex, so that no field can run into
// the next; the transcript, last, may hold anything.
Result<std::string> labelled_proof(std::string_view secret, std::string_view label,
                                   std::string_view first_nonce, std::string_view second_nonce,
                                   std::string_view transcript);

// Whether `proof` (hex, from the peer) is labelled_proof()'s, compared in constant time.
bool labelled_proof_ok(std::string_view secret, std::string_view label,
                       std::string_view first_nonce, std::string_view second_nonce,
                       std::string_view transcript, std::string_view proof);

} // namespace fabric::crypto
