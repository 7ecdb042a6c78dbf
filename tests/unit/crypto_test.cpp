// The libcrypto wrapper: RFC 4231's HMAC-SHA256 vectors, comparison, randomness, hex.
#include <gtest/gtest.h>

#include "common/crypto.h"

namespace fabric::crypto {
namespace {

std::string hex_hmac(std::string_view key, std::string_view message) {
  auto mac = hmac_sha256(key, message);
  EXPECT_TRUE(mac.ok()) << mac.error().message();
  return mac.ok() ? to_hex(*mac) : "";
}

TEST(Crypto, HmacSha256MatchesRfc4231) {
  // Test case 1: a 20-byte key.
  EXPECT_EQ(hex_hmac(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2: a key shorter than the output.
  EXPECT_EQ(hex_hmac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 3: 50 bytes of 0xdd under a 20-byte 0xaa key.
  EXPECT_EQ(hex_hmac(std::string(20, '\xaa'), std::string(50, '\xdd')),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  // Test case 6: a key longer than the block size is hashed first.
  EXPECT_EQ(hex_hmac(std::string(131, '\xaa'),
                     "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Crypto, ConstantTimeComparisonComparesContentAndLength) {
  EXPECT_TRUE(equal_constant_time("secret-mac", "secret-mac"));
  EXPECT_FALSE(equal_constant_time("secret-mac", "secret-mad"));
  EXPECT_FALSE(equal_constant_time("secret-mac", "secret-ma"));
  EXPECT_TRUE(equal_constant_time("", ""));
}

TEST(Crypto, RandomBytesDifferBetweenCalls) {
  auto a = random_bytes(32), b = random_bytes(32);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
}

TEST(Crypto, HexRoundTripsAndRefusesWhatIsNotHex) {
  std::string bytes("\x00\x7f\x80\xff", 4);
  EXPECT_EQ(to_hex(bytes), "007f80ff");
  auto back = from_hex("007F80ff", "nonce");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  auto odd = from_hex("abc", "nonce");
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().message(), "nonce: hexadecimal text of odd length");
  EXPECT_FALSE(from_hex("zz", "nonce").ok());
}

TEST(Crypto, WipeLeavesNothingBehind) {
  std::string secret = "hunter2hunter2";
  wipe(secret);
  EXPECT_TRUE(secret.empty());
}

} // namespace
} // namespace fabric::crypto
