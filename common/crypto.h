// The few cryptographic primitives fabrickit needs, over OpenSSL's libcrypto: HMAC-SHA256,
// a comparison whose time does not depend on where two secrets differ, randomness from the
// operating system's generator, and wiping a secret from memory. Nothing else in the tree
// includes an OpenSSL header.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fabric::crypto {

inline constexpr std::size_t kSha256Bytes = 32;

// HMAC-SHA256 of `message` under `key` (RFC 2104, keys up to 2 GiB): 32 raw bytes.
Result<std::string> hmac_sha256(std::string_view key, std::string_view message);

// Whether two byte strings are equal, in a time that depends only on their lengths.
bool equal_constant_time(std::string_view a, std::string_view b);

// `count` bytes from the system's cryptographic generator.
Result<std::string> random_bytes(std::size_t count);

// Overwrites the bytes in a way the compiler may not optimize away.
void wipe(std::string& secret);

// Lower-case hexadecimal, and back: from_hex() refuses odd lengths and other characters,
// naming `what`.
std::string to_hex(std::string_view bytes);
Result<std::string> from_hex(std::string_view hex, std::string_view what);

} // namespace fabric::crypto
