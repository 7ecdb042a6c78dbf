// The rendezvous' shared secret (control_channel.h has the exchange that proves it): where
// it comes from, a fresh one for a channel of the run's own, and the proofs of it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "libs/agent_channel/auth.h"

namespace fabric::nccltest {

// The file a launcher points every rank at: the job's shared secret, as a Kubernetes Secret
// mounted as a file presents it (at least 16 bytes; surrounding whitespace ignored).
inline constexpr const char* kRendezvousTokenEnv = "FABRIC_NCCLTEST_TOKEN_FILE";

// The proofs of the token, as the probe agent's handshake makes them (libs/agent_channel/auth.h)
// but under the rendezvous' own name, so no proof of one serves the other.
enum class RendezvousSide { kRank, kRankZero };

// Hex HMAC-SHA256 over the side, both nonces and the hello exactly as framed.
Result<std::string> rendezvous_proof(const probes::Token& token, RendezvousSide side,
                                     std::string_view zero_nonce, std::string_view rank_nonce,
                                     std::string_view hello_text);

// Whether `proof` (hex, from the peer) is what `side` must send; constant time.
bool rendezvous_proof_ok(const probes::Token& token, RendezvousSide side,
                         std::string_view zero_nonce, std::string_view rank_nonce,
                         std::string_view hello_text, std::string_view proof);

// The token a rendezvous uses: from the file $FABRIC_NCCLTEST_TOKEN_FILE names, none when
// it is unset. A named file that cannot be read is an error, never "no token".
Result<std::optional<probes::Token>> rendezvous_token(const char* file_from_env);

// A fresh token for a channel whose address travels over a trusted path (mpirun's).
Result<probes::Token> random_rendezvous_token();

} // namespace fabric::nccltest
