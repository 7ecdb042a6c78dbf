#include <gtest/gtest.h>

#include "common/strings.h"

namespace fabric {
namespace {

TEST(Strings, JoinPutsTheSeparatorBetweenItemsOnly) {
  EXPECT_EQ(join({}), "");
  EXPECT_EQ(join({"rxe0"}), "rxe0");
  EXPECT_EQ(join({"rxe0", "rxe1", "mlx5_0"}), "rxe0, rxe1, mlx5_0");
  EXPECT_EQ(join({"3", "4"}, "/"), "3/4");
}

TEST(Strings, JoinKeepsEmptyItemsVisible) {
  EXPECT_EQ(join({"", "b"}), ", b");
  EXPECT_EQ(join({"a", "", "c"}), "a, , c");
}

} // namespace
} // namespace fabric
