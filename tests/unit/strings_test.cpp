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

TEST(Strings, ClosestMatchNamesWhatATypoMeant) {
  const std::vector<std::string> commands = {"devices", "server", "tcp", "mesh", "lint", "topo"};
  EXPECT_EQ(closest_match("devics", commands), "devices");
  EXPECT_EQ(closest_match("tpoo", commands), "topo");
  EXPECT_EQ(closest_match("--verison", {"--version", "--log-level", "--help"}), "--version");
}

TEST(Strings, ClosestMatchSuggestsNothingForAnUnrelatedWord) {
  EXPECT_EQ(closest_match("frobnicate", {"devices", "server", "tcp"}), "");
  EXPECT_EQ(closest_match("x", {}), "");
}

} // namespace
} // namespace fabric
