// The shared challenge-response proof: known answers from
// `printf 'LABEL\nNONCE1\nNONCE2\nTRANSCRIPT' | openssl dgst -sha256 -hmac SECRET`.
#include <gtest/gtest.h>

#include "common/labelled_proof.h"

namespace fabric::crypto {
namespace {

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
constexpr const char* kFirst = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr const char* kSecond = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

std::string proof(std::string_view label, std::string_view first, std::string_view second,
                  std::string_view transcript) {
  auto made = labelled_proof(kSecret, label, first, second, transcript);
  EXPECT_TRUE(made.ok()) << made.error().message();
  return made.ok() ? *made : "";
}

TEST(LabelledProof, IsTheKnownAnswer) {
  EXPECT_EQ(proof("example label", kFirst, kSecond, R"(hello {"n":1})"),
            "11aeade91f49370591959e17177de829106d7d155b1dd0195947cbed89c947ea");
  // An empty transcript still ends the second nonce's line.
  EXPECT_EQ(proof("example label", kFirst, kSecond, ""),
            "d89ee72a460cafc3419cab75469eedc0d4ab937082d38e7c34a37b9ab9bf6e8b");
}

TEST(LabelledProof, ChangesWithEveryInput) {
  const std::string base = proof("example label", kFirst, kSecond, "t");
  EXPECT_NE(proof("example label 2", kFirst, kSecond, "t"), base);
  EXPECT_NE(proof("example label", kSecond, kFirst, "t"), base) << "nonces swapped";
  EXPECT_NE(proof("example label", kFirst, kSecond, "u"), base);
  auto other =
      labelled_proof("another secret of enough length", "example label", kFirst, kSecond, "t");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, base);
}

TEST(LabelledProof, AcceptsOnlyTheExactProof) {
  const std::string good = proof("example label", kFirst, kSecond, "t");
  EXPECT_TRUE(labelled_proof_ok(kSecret, "example label", kFirst, kSecond, "t", good));
  EXPECT_FALSE(labelled_proof_ok(kSecret, "other label", kFirst, kSecond, "t", good));
  std::string flipped = good;
  flipped[10] = flipped[10] == '0' ? '1' : '0';
  EXPECT_FALSE(labelled_proof_ok(kSecret, "example label", kFirst, kSecond, "t", flipped));
  EXPECT_FALSE(labelled_proof_ok(kSecret, "example label", kFirst, kSecond, "t",
                                 good.substr(0, good.size() - 1)));
  EXPECT_FALSE(labelled_proof_ok(kSecret, "example label", kFirst, kSecond, "t", ""));
}

} // namespace
} // namespace fabric::crypto
