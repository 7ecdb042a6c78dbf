// The agent's shared-secret authentication (--token-file): the token, read the way a
// Kubernetes Secret mounted as a file presents it, and the challenge-response of the
// handshake (protocol.h).
//
// Both sides prove that they know the token without sending it: the client's hello
// carries a fresh nonce, the agent answers with its own, the client sends
// HMAC-SHA256(token, "fabric-probe/2 client" | agent nonce | client nonce | hello) and
// the agent, once it has checked that, sends the same over "fabric-probe/2 agent" in its
// welcome. The agent's nonce makes every proof single-use; the hello inside the proof
// ties it to the test and parameters the client asked for.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fabric::probes {

// Where clients and the agent look for the token file when --token-file is not given.
inline constexpr const char* kTokenFileEnv = "FABRIC_PROBE_TOKEN_FILE";
// A token file is a few dozen bytes; anything beyond this is not one.
inline constexpr std::size_t kMaxTokenFileBytes = 4096;
// A shorter secret could be guessed; 16 random bytes are 22 characters of base64.
inline constexpr std::size_t kMinTokenBytes = 16;
// Nonces: 32 random bytes, 64 hexadecimal characters on the wire.
inline constexpr std::size_t kNonceBytes = 32;

// The shared secret. Surrounding whitespace is not part of it (`kubectl create secret
// --from-file` keeps the trailing newline an editor adds); its bytes are wiped when the
// last copy goes.
class Token {
public:
  // `source` names where the text came from in errors ("--token-file /etc/x").
  static Result<Token> from_text(std::string_view text, std::string_view source);
  // Reads a regular file of at most kMaxTokenFileBytes.
  static Result<Token> read_file(const std::string& path);

  Token(const Token& other) = default;
  Token(Token&& other) noexcept = default;
  Token& operator=(const Token& other);
  Token& operator=(Token&& other) noexcept;
  ~Token();

  std::string_view secret() const { return secret_; }
  const std::string& source() const { return source_; }

private:
  Token(std::string secret, std::string source)
      : secret_(std::move(secret)), source_(std::move(source)) {}
  std::string secret_;
  std::string source_;
};

// The token named by `flag` (--token-file), else by $FABRIC_PROBE_TOKEN_FILE; none when
// neither is set. A named file that cannot be read is an error, never "no token".
Result<std::optional<Token>> load_token(const std::optional<std::string>& flag);

// A fresh nonce as the wire carries it (lower-case hex).
Result<std::string> make_nonce();
// Whether `text` is a nonce as make_nonce() writes it (any hex case).
bool is_nonce(std::string_view text);

enum class ProofSide { kClient, kAgent };

// The proof one side sends, as hex. `hello_text` is the hello exactly as framed.
Result<std::string> make_proof(const Token& token, ProofSide side, std::string_view agent_nonce,
                               std::string_view client_nonce, std::string_view hello_text);

// Whether `proof` (hex, from the peer) is the one `side` must send; compared in constant
// time.
bool check_proof(const Token& token, ProofSide side, std::string_view agent_nonce,
                 std::string_view client_nonce, std::string_view hello_text,
                 std::string_view proof);

} // namespace fabric::probes
