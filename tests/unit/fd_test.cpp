#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/fd.h"

namespace fabric {
namespace {

bool is_open(int fd) {
  return fcntl(fd, F_GETFD) != -1;
}

TEST(UniqueFd, ClosesOnDestructionAndMovesOwnership) {
  int raw = -1;
  {
    UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(a.valid());
    raw = a.get();
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(b.get(), raw);
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(UniqueFd, ReleaseGivesUpOwnership) {
  UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int raw = a.release();
  a.reset();
  EXPECT_TRUE(is_open(raw));
  ::close(raw);
}

TEST(UniqueFd, AssignmentClosesThePreviousDescriptor) {
  UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int first = a.get();
  a = UniqueFd(::open("/dev/zero", O_RDONLY | O_CLOEXEC));
  EXPECT_NE(a.get(), -1);
  // `first` may be reused by the new open; what matters is that exactly one is open.
  if (a.get() != first) {
    EXPECT_FALSE(is_open(first));
  }
}

} // namespace
} // namespace fabric
