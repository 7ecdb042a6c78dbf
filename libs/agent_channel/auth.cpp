#include "libs/agent_channel/auth.h"

#include <cstdlib>

#include "common/atomic_file.h"
#include "common/crypto.h"
#include "common/labelled_proof.h"
#include "common/strings.h"

namespace fabric::probes {
namespace {

std::string_view proof_label(ProofSide side) {
  return side == ProofSide::kClient ? "fabric-probe/2 client" : "fabric-probe/2 agent";
}

} // namespace

Result<Token> Token::from_text(std::string_view text, std::string_view source) {
  std::string_view secret = trim(text);
  if (secret.empty()) {
    return Error(ErrorCode::kInvalidConfig, std::string(source), "the token is empty");
  }
  if (secret.size() < kMinTokenBytes) {
    return Error(ErrorCode::kInvalidConfig, std::string(source),
                 "the token is " + std::to_string(secret.size()) + " bytes; use at least " +
                     std::to_string(kMinTokenBytes))
        .with_hint("make one with `head -c 32 /dev/urandom | base64`");
  }
  return Token(std::string(secret), std::string(source));
}

Result<Token> Token::read_file(const std::string& path) {
  const std::string source = "token file " + path;
  auto text = read_bounded_file(path, kMaxTokenFileBytes);
  if (!text.ok()) return std::move(text).error().with_context("reading the " + source);
  auto token = from_text(*text, source);
  crypto::wipe(*text);
  return token;
}

Token& Token::operator=(const Token& other) {
  if (this != &other) {
    crypto::wipe(secret_);
    secret_ = other.secret_;
    source_ = other.source_;
  }
  return *this;
}

Token& Token::operator=(Token&& other) noexcept {
  if (this != &other) {
    crypto::wipe(secret_);
    secret_ = std::move(other.secret_);
    source_ = std::move(other.source_);
  }
  return *this;
}

Token::~Token() {
  crypto::wipe(secret_);
}

Result<std::optional<Token>> load_token(const std::optional<std::string>& flag) {
  std::optional<std::string> path = flag;
  if (!path) {
    const char* env = std::getenv(kTokenFileEnv);
    if (env != nullptr && *env != '\0') path = env;
  }
  if (!path) return std::optional<Token>();
  FABRIC_ASSIGN_OR_RETURN(Token token, Token::read_file(*path));
  return std::optional<Token>(std::move(token));
}

Result<std::string> make_nonce() {
  FABRIC_ASSIGN_OR_RETURN(std::string bytes, crypto::random_bytes(kNonceBytes));
  return crypto::to_hex(bytes);
}

bool is_nonce(std::string_view text) {
  return text.size() == 2 * kNonceBytes && crypto::from_hex(text, "nonce").ok();
}

Result<std::string> make_proof(const Token& token, ProofSide side, std::string_view agent_nonce,
                               std::string_view client_nonce, std::string_view hello_text) {
  return crypto::labelled_proof(token.secret(), proof_label(side), agent_nonce, client_nonce,
                                hello_text);
}

bool check_proof(const Token& token, ProofSide side, std::string_view agent_nonce,
                 std::string_view client_nonce, std::string_view hello_text,
                 std::string_view proof) {
  return crypto::labelled_proof_ok(token.secret(), proof_label(side), agent_nonce, client_nonce,
                                   hello_text, proof);
}

} // namespace fabric::probes
