// tests/support's scratch folder: where it is made, and what its removal may touch.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;

// Sets TMPDIR for one test, and puts back what was there.
class ScopedTmpdir {
public:
  explicit ScopedTmpdir(const std::string& value) {
    if (const char* old = ::getenv("TMPDIR")) old_ = old;
    ::setenv("TMPDIR", value.c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (old_) {
      ::setenv("TMPDIR", old_->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }

private:
  std::optional<std::string> old_;
};

TEST(TempDir, IsMadeUnderTmpdirAndRemovedWithItsContents) {
  TempDir parent;
  std::string made;
  {
    ScopedTmpdir tmpdir(parent.path());
    TempDir dir;
    made = dir.path();
    EXPECT_EQ(fs::path(made).parent_path(), fs::path(parent.path()));
    EXPECT_TRUE(fs::is_directory(made));
    EXPECT_EQ(fs::status(made).permissions() & fs::perms::all, fs::perms::owner_all)
        << "others cannot read a test's files";
    fs::create_directories(dir.file("a/b"));
    std::ofstream(dir.file("a/b/c")) << "x";
  }
  EXPECT_FALSE(fs::exists(made));
}

TEST(TempDir, WithoutTmpdirItIsUnderTmp) {
  ScopedTmpdir tmpdir("");
  TempDir dir;
  EXPECT_EQ(fs::path(dir.path()).parent_path(), fs::path("/tmp"));
}

TEST(TempDir, ATmpdirThatCannotHoldItIsAnErrorNamingThePath) {
  ScopedTmpdir tmpdir("/nonexistent-fabric-tmpdir");
  try {
    TempDir dir;
    FAIL() << "made " << dir.path();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-fabric-tmpdir/"), std::string::npos)
        << e.what();
  }
}

TEST(TempDir, RemovalDoesNotFollowLinksOutOfTheTree) {
  TempDir outside;
  std::ofstream(outside.file("keep")) << "kept";
  std::string made;
  {
    TempDir dir;
    made = dir.path();
    fs::create_directory_symlink(outside.path(), dir.file("to-folder"));
    fs::create_symlink(outside.file("keep"), dir.file("to-file"));
    fs::create_directory(dir.file("sub"));
    fs::create_directory_symlink(outside.path(), dir.file("sub/deeper"));
  }
  EXPECT_FALSE(fs::exists(made));
  EXPECT_TRUE(fs::exists(outside.file("keep")));
  EXPECT_TRUE(fs::is_directory(outside.path()));
}

} // namespace
} // namespace fabric::testing
