#include "tests/support/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace fabric::testing {

TempDir::TempDir() {
  // $TMPDIR as mktemp(1) reads it: a CI runner or a user whose /tmp is small or shared points
  // it elsewhere, and the tests' files must follow.
  const char* tmpdir = ::getenv("TMPDIR");
  std::string pattern = (tmpdir != nullptr && *tmpdir != '\0') ? tmpdir : "/tmp";
  pattern += "/fabric-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot make a temporary folder " + pattern + ": " +
                             std::strerror(errno));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  // remove_all removes a symbolic link itself and never descends through one.
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

} // namespace fabric::testing
