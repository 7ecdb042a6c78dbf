// A scratch folder for one test, under $TMPDIR (else /tmp), removed with everything in it.
#pragma once

#include <string>

namespace fabric::testing {

class TempDir {
public:
  // Throws std::runtime_error when the folder cannot be made: a test cannot go on without it.
  TempDir();
  // Removes the tree; a symbolic link inside it is removed, never followed, so a test's link
  // to a folder outside the tree leaves that folder alone.
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // The path of `name` inside the folder (not created).
  std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

} // namespace fabric::testing
