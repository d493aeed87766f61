// Tests of the collators (loom/collator.h): padding values, masks and
// lengths (longest, multiple of, max_length, buckets, left padding), -100 at
// padded label positions, and the masked-LM draws: over a seeded run the
// shares of chosen / [MASK] / random / kept tokens must fall within 4.5
// binomial standard deviations of transformers' 15% / 80% / 10% / 10%.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/collator.h"
#include "loom/error.h"

namespace loom::data {
namespace {

Example ex(std::vector<int64_t> ids) {
  Example e;
  e.input_ids = std::move(ids);
  return e;
}

std::vector<int64_t> values(const Batch& b, const std::string& name) {
  return b.at(name).to_vector<int64_t>();
}

TEST(Collator, PadsToLongestWithMaskAndTypeIds) {
  Example a = ex({5, 6, 7});
  a.token_type_ids = {0, 0, 1};
  Example b = ex({8});
  b.token_type_ids = {0};
  PaddingCollator collate({.pad_id = 9, .pad_type_id = 2});
  Batch batch = collate.collate({a, b});
  EXPECT_EQ(batch.at("input_ids").shape(), (Shape{2, 3}));
  EXPECT_EQ(batch.at("input_ids").dtype(), DType::i64);
  EXPECT_EQ(values(batch, "input_ids"), (std::vector<int64_t>{5, 6, 7, 8, 9, 9}));
  EXPECT_EQ(values(batch, "attention_mask"), (std::vector<int64_t>{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(values(batch, "token_type_ids"), (std::vector<int64_t>{0, 0, 1, 0, 2, 2}));
  EXPECT_FALSE(batch.contains("labels"));
  EXPECT_EQ(batch.size(), 2);
}

TEST(Collator, LeftPaddingAndClassLabels) {
  Example a = ex({5, 6, 7});
  a.label = 1;
  Example b = ex({8});
  b.label = 0;
  PaddingCollator collate({.pad_id = 0, .pad_left = true});
  Batch batch = collate.collate({a, b});
  EXPECT_EQ(values(batch, "input_ids"), (std::vector<int64_t>{5, 6, 7, 0, 0, 8}));
  EXPECT_EQ(values(batch, "attention_mask"), (std::vector<int64_t>{1, 1, 1, 0, 0, 1}));
  EXPECT_EQ(batch.at("labels").shape(), (Shape{2}));
  EXPECT_EQ(values(batch, "labels"), (std::vector<int64_t>{1, 0}));
}

TEST(Collator, PaddedLengths) {
  using S = PadOptions::Strategy;
  EXPECT_EQ(padded_length(17, {}), 17);
  EXPECT_EQ(padded_length(17, {.pad_to_multiple_of = 16}), 32);
  EXPECT_EQ(padded_length(16, {.pad_to_multiple_of = 16}), 16);
  EXPECT_EQ(padded_length(5, {.strategy = S::kMaxLength, .max_length = 64}), 64);
  EXPECT_EQ(
      padded_length(5, {.strategy = S::kMaxLength, .max_length = 60, .pad_to_multiple_of = 8}), 64);
  PadOptions buckets{.strategy = S::kBuckets, .buckets = {8, 32, 128}};
  EXPECT_EQ(padded_length(1, buckets), 8);
  EXPECT_EQ(padded_length(8, buckets), 8);
  EXPECT_EQ(padded_length(9, buckets), 32);
  EXPECT_EQ(padded_length(100, buckets), 128);
  auto error_of = [](int64_t n, const PadOptions& o) -> std::string {
    try {
      padded_length(n, o);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(error_of(129, buckets),
            "[collator] an example has 129 tokens, more than the "
            "largest bucket 128");
  EXPECT_EQ(error_of(65, {.strategy = S::kMaxLength, .max_length = 64})
                .rfind("[collator] an example has 65 tokens, more than max_length 64", 0),
            0u);
  EXPECT_EQ(error_of(3, {.strategy = S::kBuckets, .buckets = {8, 8}}),
            "[collator] bucket lengths must be positive and ascending; bucket 1 is 8");
  EXPECT_THROW(PaddingCollator({.strategy = S::kMaxLength}), Error);
  EXPECT_THROW(PaddingCollator().collate({}), Error);
  EXPECT_THROW(PaddingCollator().collate({ex({1}), ex({})}), Error);
}

TEST(Collator, MismatchedFieldsAreAnError) {
  Example a = ex({1});
  a.label = 0;
  try {
    PaddingCollator().collate({a, ex({2})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("example 1 of the batch does not have the same fields"),
              std::string::npos);
  }
}

TEST(Collator, CausalLmLabelsAreIdsWithPaddingIgnored) {
  // Pad id 50256 is also a real token here (GPT-2's eos): only padding is ignored.
  CausalLMCollator collate({.pad_to_multiple_of = 4, .pad_id = 50256});
  Batch batch = collate.collate({ex({1, 50256, 3}), ex({4, 5, 6, 7, 8})});
  EXPECT_EQ(batch.at("input_ids").shape(), (Shape{2, 8}));
  EXPECT_EQ(values(batch, "labels"),
            (std::vector<int64_t>{1, 50256, 3, -100, -100, -100, -100, -100,  //
                                  4, 5, 6, 7, 8, -100, -100, -100}));
  EXPECT_EQ(values(batch, "input_ids")[3], 50256);
}

TEST(Collator, TokenLabelsPadWithIgnoreIndex) {
  Example a = ex({1, 2});
  a.labels = {7, 8};
  Example b = ex({3});
  b.labels = {9};
  Batch batch = PaddingCollator().collate({a, b});
  EXPECT_EQ(values(batch, "labels"), (std::vector<int64_t>{7, 8, 9, -100}));
}

// ---- padding samples of a distributed sampler (data parallel) ----

TEST(Collator, PaddingSamplesGetIgnoredLabelsOfEveryKind) {
  // Token labels [B, T]: the whole row of example 1 becomes -100.
  CausalLMCollator clm;
  Batch tokens = clm.collate({ex({1, 2, 3}), ex({4, 5}), ex({6})});
  mask_padding_labels(tokens, {false, true, false});
  EXPECT_EQ(values(tokens, "labels"),
            (std::vector<int64_t>{1, 2, 3, -100, -100, -100, 6, -100, -100}));
  EXPECT_EQ(values(tokens, "input_ids")[3], 4) << "inputs are untouched";
  // Class ids [B] (sequence classification), also i32.
  Example a = ex({1}), b = ex({2});
  a.label = 3;
  b.label = 0;
  Batch classes = PaddingCollator().collate({a, b});
  mask_padding_labels(classes, {true, false});
  EXPECT_EQ(values(classes, "labels"), (std::vector<int64_t>{-100, 0}));
  classes.set("labels", tensor_i64({5, 6}, {2}).to(DType::i32));
  mask_padding_labels(classes, {false, true});
  EXPECT_EQ(classes.at("labels").dtype(), DType::i32);
  EXPECT_EQ(values(classes, "labels"), (std::vector<int64_t>{5, -100}));
  // No flags, none set, or no labels: unchanged.
  Batch before = clm.collate({ex({1, 2})});
  Batch same = before;
  mask_padding_labels(same, {});
  mask_padding_labels(same, {false});
  EXPECT_EQ(values(same, "labels"), values(before, "labels"));
  Batch unlabeled = PaddingCollator().collate({ex({1})});
  mask_padding_labels(unlabeled, {true});
  EXPECT_FALSE(unlabeled.contains("labels"));
}

TEST(Collator, PaddingMaskErrorsNameTheSizesAndDtype) {
  Batch batch = CausalLMCollator().collate({ex({1}), ex({2})});
  try {
    mask_padding_labels(batch, {true, false, false});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[collator] padding flags for 3 examples, the batch has 2 (labels [2,1])");
  }
  batch.set("labels", tensor({0.5f, 1.5f}, {2}));
  try {
    mask_padding_labels(batch, {true, false});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot mask labels of dtype float32"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(PaddingMaskCollator(nullptr), Error);
}

TEST(Collator, PaddingMaskCollatorMasksTheFlaggedExamplesOfItsContext) {
  PaddingMaskCollator masking(std::make_shared<CausalLMCollator>());
  const std::vector<Example> examples{ex({1, 2}), ex({3, 4})};
  EXPECT_EQ(values(masking.collate(examples, {.epoch = 0, .batch_index = 2}), "labels"),
            (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(
      values(masking.collate(examples, {.epoch = 0, .batch_index = 2, .padding = {false, true}}),
             "labels"),
      (std::vector<int64_t>{1, 2, -100, -100}));
}

// ---- masked LM ----

constexpr int64_t kPad = 0, kCls = 1, kSep = 2, kMask = 3, kVocab = 1000;

// Deterministic examples [CLS] w... [SEP] of lengths 8..127 with ids in [10, 1000).
std::vector<Example> mlm_examples(int n) {
  std::vector<Example> out;
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (int i = 0; i < n; ++i) {
    int64_t len = 8 + static_cast<int64_t>(next() % 120);
    Example e;
    e.input_ids.push_back(kCls);
    for (int64_t t = 0; t + 2 < len; ++t) e.input_ids.push_back(10 + next() % (kVocab - 10));
    e.input_ids.push_back(kSep);
    out.push_back(std::move(e));
  }
  return out;
}

MaskingOptions masking(uint64_t seed) {
  return {.mask_id = kMask, .vocab_size = kVocab, .special_ids = {kPad, kCls, kSep}, .seed = seed};
}

TEST(MaskedLm, ProportionsMatchTransformersWithinBinomialBounds) {
  std::vector<Example> all = mlm_examples(2400);
  MaskedLMCollator collate({.pad_to_multiple_of = 8, .pad_id = kPad}, masking(7));
  int64_t candidates = 0, chosen = 0, as_mask = 0, as_random = 0, kept = 0;
  for (size_t start = 0; start < all.size(); start += 16) {
    std::vector<Example> examples(all.begin() + start, all.begin() + start + 16);
    Batch b = collate.collate(examples, {.epoch = 0, .batch_index = int64_t(start / 16)});
    std::vector<int64_t> ids = values(b, "input_ids"), labels = values(b, "labels");
    int64_t T = b.at("input_ids").size(1);
    for (size_t r = 0; r < examples.size(); ++r) {
      const std::vector<int64_t>& orig = examples[r].input_ids;
      for (int64_t t = 0; t < T; ++t) {
        size_t i = r * T + t;
        bool real = t < static_cast<int64_t>(orig.size());
        int64_t o = real ? orig[t] : kPad;
        bool special = !real || o == kCls || o == kSep;
        if (special) {  // never chosen: id unchanged, label ignored
          ASSERT_EQ(ids[i], o);
          ASSERT_EQ(labels[i], -100);
          continue;
        }
        ++candidates;
        if (labels[i] == -100) {
          ASSERT_EQ(ids[i], o) << "an unchosen token must keep its id";
          continue;
        }
        ASSERT_EQ(labels[i], o) << "a chosen token's label is its original id";
        ++chosen;
        if (ids[i] == kMask)
          ++as_mask;
        else if (ids[i] == o)
          ++kept;
        else
          ++as_random;
        ASSERT_TRUE(ids[i] >= 0 && ids[i] < kVocab);
      }
    }
  }
  ASSERT_GT(candidates, 100000);
  // A random id equals [MASK] or the original id with probability 1/V each.
  const double v = 1.0 / kVocab;
  auto within = [](int64_t k, int64_t n, double p, const char* what) {
    double sd = std::sqrt(p * (1 - p) / n);
    double share = static_cast<double>(k) / n;
    EXPECT_NEAR(share, p, 4.5 * sd) << what << ": " << k << " of " << n;
  };
  within(chosen, candidates, 0.15, "chosen");
  within(as_mask, chosen, 0.8 + 0.1 * v, "[MASK]");
  within(kept, chosen, 0.1 + 0.1 * v, "kept");
  within(as_random, chosen, 0.1 * (1 - 2 * v), "random");
}

TEST(MaskedLm, PureFunctionOfSeedEpochAndBatchIndexNotPadding) {
  std::vector<Example> ex8 = mlm_examples(8);
  MaskedLMCollator a({.pad_id = kPad}, masking(1));
  MaskedLMCollator fixed(
      {.strategy = PadOptions::Strategy::kMaxLength, .max_length = 128, .pad_id = kPad},
      masking(1));
  MaskedLMCollator other_seed({.pad_id = kPad}, masking(2));
  auto run = [&](const MaskedLMCollator& c, int64_t epoch, int64_t index) {
    Batch b = c.collate(ex8, {epoch, index});
    return std::make_pair(values(b, "input_ids"), values(b, "labels"));
  };
  auto first = run(a, 0, 3);
  EXPECT_EQ(first, run(a, 0, 3));
  EXPECT_NE(first.second, run(a, 1, 3).second);
  EXPECT_NE(first.second, run(a, 0, 4).second);
  EXPECT_NE(first.second, run(other_seed, 0, 3).second);
  // The same tokens are chosen whatever the padded length.
  Batch longer = fixed.collate(ex8, {0, 3});
  std::vector<int64_t> l128 = values(longer, "labels");
  int64_t T = static_cast<int64_t>(first.second.size() / 8);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t t = 0; t < T; ++t) ASSERT_EQ(first.second[r * T + t], l128[r * 128 + t]);
}

TEST(MaskedLm, SpecialTokensMaskOverridesIdsAndOptionsAreChecked) {
  Example e = ex({1, 2, 3, 4, 5, 6, 7, 8});
  e.special_tokens_mask = {1, 1, 1, 1, 1, 1, 1, 1};  // nothing may be chosen
  MaskingOptions m = masking(0);
  m.mlm_probability = 1.0;
  MaskedLMCollator c({}, m);
  Batch b = c.collate({e});
  EXPECT_EQ(values(b, "labels"), std::vector<int64_t>(8, -100));
  e.special_tokens_mask = {0, 0, 0, 0, 0, 0, 0, 1};
  m.mask_replace_prob = 1.0;
  m.random_replace_prob = 0.0;
  Batch all = MaskedLMCollator({}, m).collate({e});
  EXPECT_EQ(values(all, "input_ids"), (std::vector<int64_t>{3, 3, 3, 3, 3, 3, 3, 8}));
  EXPECT_EQ(values(all, "labels"), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, -100}));
  m.mask_id = -1;
  EXPECT_THROW(MaskedLMCollator({}, m), Error);
  m = masking(0);
  m.mask_replace_prob = 0.95;
  EXPECT_THROW(MaskedLMCollator({}, m), Error);
  m = masking(0);
  m.vocab_size = kMask;
  EXPECT_THROW(MaskedLMCollator({}, m), Error);
}

}  // namespace
}  // namespace loom::data
