// The CNI unit tests' inputs: tests/data/cni/corpus, which also seeds the fuzzer.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "common/atomic_file.h"

namespace fabric::cni {

// The text of corpus file `name`; "" (and a failed expectation) when it cannot be read.
inline std::string corpus_file(const std::string& name) {
  auto text = read_file(std::string(FABRIC_TEST_DATA_DIR) + "/cni/corpus/" + name);
  EXPECT_TRUE(text.ok()) << name << ": " << (text.ok() ? "" : text.error().message());
  return text.ok() ? *text : std::string();
}

} // namespace fabric::cni
