// edit_distance and closest_name, the "did you mean" rule shared by the CLI's
// unknown flags and subcommands, TrainingArguments and --config_overrides.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/edit_distance.h"

namespace loom {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("train", ""), 5u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("trian", "train"), 2u);  // a transposition is two edits
}

TEST(ClosestName, NearestWithinTheLimitFirstOfEquals) {
  const std::vector<std::string> names = {"learning_rate", "warmup_steps", "max_steps",
                                          "save_steps"};
  EXPECT_EQ(closest_name("lerning_rate", names), "learning_rate");
  EXPECT_EQ(closest_name("save_step", names), "save_steps");  // 1 edit; max_steps is 3
  EXPECT_EQ(closest_name("sax_steps", names), "max_steps");   // 1 edit from both: first listed
  EXPECT_EQ(closest_name("frobnicate", names), "");
  EXPECT_EQ(closest_name("x", {}), "");
}

TEST(ClosestName, DefaultLimitIsTwoOrAThirdOfTheWord) {
  // 12 letters: up to 4 edits.
  EXPECT_EQ(closest_name("abcdefghijkl", {"abcdefghWXYZ"}), "abcdefghWXYZ");  // 4
  EXPECT_EQ(closest_name("abcdefghijkl", {"abcdefgVWXYZ"}), "");              // 5
  // 3 letters: up to 2 edits.
  EXPECT_EQ(closest_name("abc", {"aXY"}), "aXY");
  EXPECT_EQ(closest_name("abc", {"XYZ"}), "");
  // An explicit limit replaces the default.
  EXPECT_EQ(closest_name("abcdefghijkl", {"abcdefghijXY"}, 1), "");
  EXPECT_EQ(closest_name("abcdefghijkl", {"abcdefghijkX"}, 1), "abcdefghijkX");
}

}  // namespace
}  // namespace loom
