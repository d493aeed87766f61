// GenerationConfig::repetition_penalty: transformers'
// RepetitionPenaltyLogitsProcessor (generation/logits_process.py): each id
// already in the row has its logit divided by the penalty when positive,
// multiplied when negative; an id seen twice is penalized once; ids outside
// the vocabulary are skipped; a penalty <= 0 or not finite is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "loom/error.h"
#include "loom/generation.h"

namespace loom::testing {
namespace {

TEST(RepetitionPenalty, DividesPositiveAndMultipliesNegativeLogitsOfSeenIds) {
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, 0.0f};
  const std::vector<int64_t> previous = {0, 1, 1, 4, 7, -3};  // 1 twice; 7, -3 out of range
  apply_repetition_penalty(logits, previous, 2.0);
  EXPECT_FLOAT_EQ(logits[0], 1.0f);   // 2 / 2
  EXPECT_FLOAT_EQ(logits[1], -2.0f);  // -1 * 2, once
  EXPECT_FLOAT_EQ(logits[2], 0.5f);   // not seen
  EXPECT_FLOAT_EQ(logits[3], 3.0f);   // not seen
  EXPECT_FLOAT_EQ(logits[4], 0.0f);
}

TEST(RepetitionPenalty, ChangesTheGreedyChoice) {
  // Token 3 leads, but it was already generated: 3 / 1.5 = 2 < 2.5.
  std::vector<float> logits = {0.0f, 2.5f, 0.0f, 3.0f};
  const std::vector<int64_t> previous = {3};
  GenerationConfig config;
  EXPECT_EQ(select_next_token(logits, config, 0.0), 3);
  apply_repetition_penalty(logits, previous, 1.5);
  EXPECT_EQ(select_next_token(logits, config, 0.0), 1);
}

TEST(RepetitionPenalty, OneIsOffAndBadValuesAreRefused) {
  std::vector<float> logits = {2.0f, -1.0f};
  const std::vector<int64_t> previous = {0, 1};
  apply_repetition_penalty(logits, previous, 1.0);
  EXPECT_FLOAT_EQ(logits[0], 2.0f);
  EXPECT_FLOAT_EQ(logits[1], -1.0f);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    GenerationConfig config;
    config.repetition_penalty = bad;
    EXPECT_THROW(config.validate(), Error) << bad;
  }
}

}  // namespace
}  // namespace loom::testing
