// loom::generate and the StaticCache on the tiny GPT-2 fixture
// (tests/fixtures/models/gpt2, vocab 96, n_positions 64): the cached path
// gives the same tokens and logits as recomputing the whole sequence, the
// lazy device compiles two graphs for a whole generation and writes only
// the new rows of each cache buffer in a decode step, top_k = 1 sampling
// is greedy, seeded sampling repeats, and the logits warpers follow
// transformers' TopK/TopP warpers on hand-computed rows.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/scoped_env.h"
#include "loom/generation.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

std::shared_ptr<GPT2LMHeadModel> tiny_gpt2(const Device& dev) {
  return GPT2LMHeadModel::from_pretrained(testing::model_fixture("gpt2"), dev);
}

// Two prompt rows of 5 tokens each.
Tensor prompt(const Device& dev = {}) {
  return tensor_i64({3, 17, 42, 8, 77, 5, 5, 60, 1, 90}, {2, 5}).to(dev);
}

GenerationConfig greedy(int64_t n, bool use_cache) {
  GenerationConfig c;
  c.max_new_tokens = n;
  c.use_cache = use_cache;
  return c;
}

TEST(Generation, KvCacheMatchesFullRecompute) {
  auto model = tiny_gpt2(Device("cpu"));
  // 12 steps: each full recompute has a new length, which the eager device
  // compiles anew per op (about 40 ms a step here).
  GenerateOutput cached = generate(*model, prompt(), greedy(12, true));
  GenerateOutput full = generate(*model, prompt(), greedy(12, false));
  ASSERT_EQ(cached.sequences.shape(), (Shape{2, 17}));
  EXPECT_EQ(cached.sequences.to_vector<int64_t>(), full.sequences.to_vector<int64_t>());
  EXPECT_EQ(cached.new_tokens, 12);
  // The prompt comes back unchanged in front.
  std::vector<int64_t> seq = cached.sequences.to_vector<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(seq.begin(), seq.begin() + 5),
            (std::vector<int64_t>{3, 17, 42, 8, 77}));
}

TEST(Generation, CachedLogitsEqualForwardLogits) {
  auto model = tiny_gpt2(Device("cpu"));
  NoGradGuard no_grad;
  Tensor ids = prompt();
  ModelInputs in;
  in.input_ids = ids;
  Tensor expected = model->forward(in).logits;  // [2,5,96]
  // Prompt of 3 tokens, then the 4th and 5th one at a time.
  StaticCache cache = model->new_static_cache(2, 8);
  Tensor first = model->forward_with_cache(slice(ids, 1, 0, 3), arange(3), cache).logits;
  EXPECT_TRUE(testing::all_close(first, slice(expected, 1, 0, 3), 1e-5, 1e-5));
  for (int64_t t = 3; t < 5; ++t) {
    Tensor step =
        model->forward_with_cache(slice(ids, 1, t, t + 1), tensor_i64({t}, {1}), cache).logits;
    EXPECT_TRUE(testing::all_close(step, slice(expected, 1, t, t + 1), 1e-5, 1e-5)) << "t=" << t;
  }
}

TEST(Generation, LazyCompilesAtMostTwoGraphs) {
  testing::reset_lazy_state();
  Device lazy_dev("lazy");
  auto model = tiny_gpt2(lazy_dev);
  lazy::mark_step();
  int64_t before = metrics::counter("UncachedCompile");
  GenerateOutput out = generate(*model, prompt(lazy_dev), greedy(10, true));
  int64_t compiles = metrics::counter("UncachedCompile") - before;
  EXPECT_LE(compiles, 2) << metrics::report();
  EXPECT_GE(metrics::counter("CachedCompile"), 8) << "decode steps reuse one executable";
  EXPECT_TRUE(metrics::recompile_causes().size() <= 1) << metrics::report();
  // Same tokens as the eager device without the cache.
  auto eager = tiny_gpt2(Device("cpu"));
  GenerateOutput ref = generate(*eager, prompt(), greedy(10, false));
  EXPECT_EQ(out.sequences.to_vector<int64_t>(), ref.sequences.to_vector<int64_t>());
}

// A lazy decode step rewrites every cache buffer in place: the new buffer
// is the donated old one, and index_copy moves one row per head (the
// position and the new rows read, the rows written) instead of copying
// the whole [B, H, L, D] buffer (twice, with where + index_add, before).
TEST(Generation, LazyDecodeStepWritesOnlyTheNewCacheRows) {
  testing::reset_lazy_state();
  testing::ScopedEnv times("LOOM_KERNEL_TIMES", "1");
  Device lazy_dev("lazy");
  auto model = tiny_gpt2(lazy_dev);
  NoGradGuard no_grad;
  StaticCache cache = model->new_static_cache(2, 8);  // 2 layers x (K, V) of f32[2, 4, 8, 8]
  model->forward_with_cache(prompt(lazy_dev), arange(5).to(lazy_dev), cache);
  lazy::mark_step();
  lazy::wait();  // the prompt pass ran: the metrics below are the decode step's
  const int64_t buffer_bytes = 2 * 4 * 8 * 8 * 4, row_bytes = 2 * 4 * 1 * 8 * 4;
  for (int64_t t = 5; t < 8; ++t) {
    SCOPED_TRACE("position " + std::to_string(t));
    metrics::reset();
    Tensor ids = tensor_i64({1, 2}, {2, 1}).to(lazy_dev);
    Tensor pos = tensor_i64({t}, {1}).to(lazy_dev);
    Tensor logits = model->forward_with_cache(ids, pos, cache).logits;
    lazy::mark_step();
    lazy::wait();
    EXPECT_EQ(logits.shape(), (Shape{2, 1, 96}));
    EXPECT_EQ(metrics::counter("ExecuteCount"), 1);
    EXPECT_EQ(metrics::timer_count("KernelTime.index_copy"), 4);
    EXPECT_EQ(metrics::counter("KernelBytes.index_copy"), 4 * (8 + 2 * row_bytes))
        << "a cache write copied more than the new rows";
    EXPECT_GE(metrics::counter("DonatedBytes"), 4 * buffer_bytes);
    EXPECT_EQ(metrics::counter("DonationVetoed"), 0);
    EXPECT_EQ(metrics::counter("KernelBytes.where"), 0);
    EXPECT_EQ(metrics::counter("KernelBytes.index_add"), 0);
  }
}

TEST(Generation, TopK1SamplingIsGreedy) {
  auto model = tiny_gpt2(Device("cpu"));
  GenerationConfig c = greedy(15, true);
  c.do_sample = true;
  c.top_k = 1;
  c.temperature = 1.7;
  manual_seed(3);
  GenerateOutput sampled = generate(*model, prompt(), c);
  GenerateOutput greedy_out = generate(*model, prompt(), greedy(15, true));
  EXPECT_EQ(sampled.sequences.to_vector<int64_t>(), greedy_out.sequences.to_vector<int64_t>());
}

TEST(Generation, SeededSamplingRepeats) {
  auto model = tiny_gpt2(Device("cpu"));
  GenerationConfig c = greedy(20, true);
  c.do_sample = true;
  c.top_k = 0;
  c.temperature = 2.0;  // flat distribution: different seeds diverge at once
  auto run = [&](uint64_t seed) {
    manual_seed(seed);
    return generate(*model, prompt(), c).sequences.to_vector<int64_t>();
  };
  std::vector<int64_t> a = run(11), b = run(11), other = run(12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  // Sampling (not greedy) happened: the greedy continuation differs.
  EXPECT_NE(a, generate(*model, prompt(), greedy(20, true)).sequences.to_vector<int64_t>());
}

TEST(Generation, StopsWhenEveryRowReachedEos) {
  auto model = tiny_gpt2(Device("cpu"));
  const int64_t t = 5, n = 6;
  std::vector<int64_t> ref =
      generate(*model, prompt(), greedy(n, true)).sequences.to_vector<int64_t>();
  // Row 0's first new token becomes the eos: row 0 stops at once, row 1 at
  // its first eos (if any); finished rows are padded with pad_token_id.
  GenerationConfig c = greedy(n, true);
  c.eos_token_id = ref[t];
  c.pad_token_id = -1;
  std::vector<int64_t> got = generate(*model, prompt(), c).sequences.to_vector<int64_t>();
  int64_t stop[2] = {0, 0};  // steps each row runs
  for (int64_t r = 0; r < 2; ++r) {
    stop[r] = n;
    for (int64_t j = 0; j < n; ++j)
      if (ref[r * (t + n) + t + j] == ref[t]) {
        stop[r] = j + 1;
        break;
      }
  }
  ASSERT_EQ(stop[0], 1);
  int64_t width = t + std::max(stop[0], stop[1]);
  ASSERT_EQ(static_cast<int64_t>(got.size()), 2 * width);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t j = 0; j < width; ++j)
      EXPECT_EQ(got[r * width + j], j < t + stop[r] ? ref[r * (t + n) + j] : -1)
          << "row " << r << " position " << j;
}

TEST(Generation, RejectsBadArguments) {
  auto model = tiny_gpt2(Device("cpu"));
  EXPECT_THROW(generate(*model, prompt(), greedy(60, true)), Error);  // 5 + 60 > 64
  GenerationConfig c = greedy(3, true);
  c.temperature = 0;
  EXPECT_THROW(generate(*model, prompt(), c), Error);
  c = greedy(3, true);
  c.top_p = 1.5;
  EXPECT_THROW(generate(*model, prompt(), c), Error);
  EXPECT_THROW(generate(*model, tensor_i64({1, 2}, {2}), greedy(3, true)), Error);
  EXPECT_THROW(model->new_static_cache(1, 65), Error);
  // transformers' GenerationConfig.validate: "`max_new_tokens` must be greater than 0".
  try {
    generate(*model, prompt(), greedy(0, true));
    ADD_FAILURE() << "max_new_tokens 0 generated";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[generate] max_new_tokens must be greater than 0, got 0");
  }
}

// config.json's eos_token_id may be a list (Llama 3: [128001, 128008, 128009]):
// transformers stops a row at any of them and pads finished rows with the
// first when there is no pad_token_id.
TEST(Generation, StopsAtAnyIdOfAnEosList) {
  auto model = tiny_gpt2(Device("cpu"));
  const int64_t t = 5, n = 6;
  std::vector<int64_t> ref =
      generate(*model, prompt(), greedy(n, true)).sequences.to_vector<int64_t>();
  GenerationConfig c = greedy(n, true);
  c.eos_token_id = -7;  // never produced: only the list's second id stops
  c.eos_token_ids = {-7, ref[t]};
  std::vector<int64_t> got = generate(*model, prompt(), c).sequences.to_vector<int64_t>();
  int64_t stop1 = n;  // steps row 1 runs
  for (int64_t j = 0; j < n; ++j)
    if (ref[(t + n) + t + j] == ref[t]) {
      stop1 = j + 1;
      break;
    }
  const int64_t width = t + stop1;
  ASSERT_EQ(static_cast<int64_t>(got.size()), 2 * width);
  for (int64_t j = 0; j < width; ++j) {
    EXPECT_EQ(got[j], j <= t ? ref[j] : -7) << "row 0 position " << j;
    EXPECT_EQ(got[width + j], ref[(t + n) + j]) << "row 1 position " << j;
  }
}

TEST(LogitsWarpers, TopKKeepsTiesAtTheThreshold) {
  GenerationConfig c;
  c.top_k = 2;
  std::vector<float> row = {1.0f, 3.0f, 2.0f, 2.0f, 0.5f};
  warp_logits(row, c);
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(row, (std::vector<float>{-inf, 3.0f, 2.0f, 2.0f, -inf}));
}

TEST(LogitsWarpers, TopPRemovesTheTailButKeepsTheTopToken) {
  GenerationConfig c;
  c.top_k = 0;
  c.top_p = 0.7;  // probabilities 0.2, 0.3, 0.5: cumulative 0.2 <= 0.3 is removed
  std::vector<float> row = {std::log(0.5f), std::log(0.2f), std::log(0.3f)};
  warp_logits(row, c);
  EXPECT_FALSE(std::isinf(row[0]));
  EXPECT_TRUE(std::isinf(row[1]) && row[1] < 0);
  EXPECT_FALSE(std::isinf(row[2]));
  c.top_p = 0.01;  // only the most likely token survives
  row = {std::log(0.5f), std::log(0.2f), std::log(0.3f)};
  warp_logits(row, c);
  EXPECT_FALSE(std::isinf(row[0]));
  EXPECT_TRUE(std::isinf(row[1]) && std::isinf(row[2]));
}

TEST(LogitsWarpers, SamplingFollowsTheCumulativeDistribution) {
  GenerationConfig c;
  c.do_sample = true;
  c.top_k = 0;
  std::vector<float> row = {std::log(0.25f), std::log(0.5f), std::log(0.25f)};
  EXPECT_EQ(select_next_token(row, c, 0.10), 0);
  EXPECT_EQ(select_next_token(row, c, 0.30), 1);
  EXPECT_EQ(select_next_token(row, c, 0.80), 2);
  EXPECT_EQ(select_next_token(row, c, 0.999999), 2);
  c.do_sample = false;
  EXPECT_EQ(select_next_token(row, c, 0.0), 1);
  c.do_sample = true;
  c.temperature = 0.01;  // sharpened to the top token
  EXPECT_EQ(select_next_token(row, c, 0.999), 1);
}

// Issue 25: temperature 1e-45 (or 1e-300) divided the logits into +-inf, softmax
// gave NaN and sampling picked eos; such a temperature is refused, and one that
// lets a logit overflow float32 is refused when it does (never a NaN draw).
TEST(LogitsWarpers, TemperatureThatOverflowsTheLogitsIsRefused) {
  GenerationConfig c;
  c.do_sample = true;
  for (double t : {1e-45, 1e-300, 2.9e-39}) {
    c.temperature = t;
    EXPECT_THROW(c.validate(), Error) << t;
  }
  c.temperature = 3e-39;  // the bound: allowed, but 100 / 3e-39 overflows float32
  c.validate();
  c.top_k = 0;
  std::vector<float> row = {100.0f, 1.0f};
  EXPECT_THROW(warp_logits(row, c), Error);
  row = {0.5f, 0.25f};  // |logit| / t within float32: fine, and as sharp as greedy
  EXPECT_EQ(select_next_token(row, c, 0.999), 0);
  c.do_sample = false;  // greedy never divides
  c.temperature = 1e-45;
  c.validate();
}

}  // namespace
}  // namespace loom
