// loom::generate against transformers' generate() on a tiny GPT-2 whose greedy output
// varies (tests/fixtures/generation/: gpt2/ and gpt2.json, tools/make_generation_fixtures.py):
//   - greedy: the same ids, eos padding included;
//   - sampling: loom's generator is not torch's, so ids are not compared; instead, at every
//     step of a sequence transformers sampled, loom's warped next-token distribution
//     (warp_logits over the model's logits, then softmax) must equal the distribution of
//     transformers' logits processors, with the same support (top-k / top-p set); and loom's
//     own draws must fall in that support with frequencies near those probabilities.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "data/tokenizer_test_util.h"
#include "loom/generation.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

using nlohmann::json;

const json& generation_fixture() {
  static const json j = test::load_json(test::source_path("tests/fixtures/generation/gpt2.json"));
  return j;
}

std::shared_ptr<GPT2LMHeadModel> varied_gpt2() {
  return GPT2LMHeadModel::from_pretrained(test::source_path("tests/fixtures/generation/gpt2"),
                                          Device("cpu"));
}

Tensor ids_tensor(const json& rows, size_t length) {
  std::vector<int64_t> flat;
  for (const json& row : rows)
    for (size_t t = 0; t < length; ++t) flat.push_back(row[t].get<int64_t>());
  return tensor_i64(flat, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(length)});
}

GenerationConfig sampling_config(const json& setting) {
  GenerationConfig c;
  c.do_sample = true;
  c.temperature = setting["temperature"].get<double>();
  c.top_k = setting["top_k"].get<int64_t>();
  c.top_p = setting["top_p"].get<double>();
  return c;
}

// softmax of warped logits (removed entries are -inf and get 0).
std::vector<double> probabilities(std::vector<float> logits, const GenerationConfig& c) {
  warp_logits(logits, c);
  double m = -INFINITY, total = 0;
  for (float x : logits) m = std::max(m, double(x));
  std::vector<double> p(logits.size());
  for (size_t i = 0; i < p.size(); ++i) total += p[i] = std::exp(double(logits[i]) - m);
  for (double& x : p) x /= total;
  return p;
}

TEST(GenerationReference, GreedyIdsMatchTransformers) {
  auto model = varied_gpt2();
  ASSERT_GE(generation_fixture()["greedy"].size(), 3u);
  for (const json& c : generation_fixture()["greedy"]) {
    GenerationConfig gc;
    gc.max_new_tokens = c["max_new_tokens"].get<int64_t>();
    gc.eos_token_id = c["eos_token_id"].get<int64_t>();
    const json& prompt = c["prompt"];
    for (bool use_cache : {true, false}) {
      gc.use_cache = use_cache;
      GenerateOutput out = generate(*model, ids_tensor(prompt, prompt[0].size()), gc);
      std::vector<int64_t> want;
      for (const json& row : c["sequences"])
        for (const json& id : row) want.push_back(id.get<int64_t>());
      EXPECT_EQ(out.sequences.shape()[1], static_cast<int64_t>(c["sequences"][0].size()))
          << "prompt length " << prompt[0].size() << ", use_cache " << use_cache;
      EXPECT_TRUE(test::same_values(out.sequences.to_vector<int64_t>(), want))
          << "prompt length " << prompt[0].size() << ", use_cache " << use_cache;
    }
  }
}

TEST(GenerationReference, WarpedDistributionsMatchTransformers) {
  auto model = varied_gpt2();
  NoGradGuard no_grad;
  ASSERT_GE(generation_fixture()["sampling"].size(), 8u);
  for (const json& c : generation_fixture()["sampling"]) {
    GenerationConfig gc = sampling_config(c["setting"]);
    SCOPED_TRACE(c["setting"].dump());
    for (const json& step : c["steps"]) {
      const size_t t = step["prefix_length"].get<size_t>();
      SCOPED_TRACE("prefix length " + std::to_string(t));
      ModelInputs in;
      in.input_ids = ids_tensor(c["sequences"], t);
      std::vector<float> logits = model->forward(in).logits.to_vector<float>();
      const size_t vocab = step["probs"][0].size();
      for (size_t b = 0; b < step["probs"].size(); ++b) {
        std::vector<float> row(logits.begin() + ((b + 1) * t - 1) * vocab,
                               logits.begin() + (b + 1) * t * vocab);
        std::vector<double> got = probabilities(row, gc);
        std::vector<double> want = step["probs"][b].get<std::vector<double>>();
        std::vector<int64_t> got_support, want_support;
        for (size_t v = 0; v < vocab; ++v) {
          if (got[v] > 0) got_support.push_back(static_cast<int64_t>(v));
          if (want[v] > 0) want_support.push_back(static_cast<int64_t>(v));
        }
        EXPECT_TRUE(test::same_values(got_support, want_support)) << "row " << b;
        EXPECT_TRUE(testing::all_close(got, want, 1e-4, 1e-6)) << "row " << b;
      }
    }
  }
}

// loom's own draws (do_sample through generate) land in transformers' support, with
// frequencies within 4 standard errors of its probabilities (fixed seed: deterministic).
TEST(GenerationReference, SampledTokensFollowTransformersDistribution) {
  auto model = varied_gpt2();
  for (const json& c : generation_fixture()["sampling"]) {
    if (c["prompt"].size() != 1) continue;  // one-row prompts, replicated below
    GenerationConfig gc = sampling_config(c["setting"]);
    gc.max_new_tokens = 1;
    SCOPED_TRACE(c["setting"].dump());
    const json& prompt = c["prompt"][0];
    const int64_t rows = 4000;
    std::vector<int64_t> ids;
    for (int64_t r = 0; r < rows; ++r)
      for (const json& id : prompt) ids.push_back(id.get<int64_t>());
    manual_seed(5);
    GenerateOutput out =
        generate(*model, tensor_i64(ids, {rows, static_cast<int64_t>(prompt.size())}), gc);
    std::vector<int64_t> seq = out.sequences.to_vector<int64_t>();
    const int64_t width = out.sequences.shape()[1];
    std::vector<double> want = c["steps"][0]["probs"][0].get<std::vector<double>>();
    std::map<int64_t, int64_t> counts;
    for (int64_t r = 0; r < rows; ++r) ++counts[seq[r * width + width - 1]];
    for (const auto& [token, n] : counts)
      EXPECT_GT(want.at(static_cast<size_t>(token)), 0.0)
          << "token " << token << " drawn " << n << " times is outside transformers' support";
    for (size_t v = 0; v < want.size(); ++v) {
      const double freq = static_cast<double>(counts[static_cast<int64_t>(v)]) / rows;
      const double se = std::sqrt(want[v] * (1 - want[v]) / rows);
      EXPECT_NEAR(freq, want[v], 4 * se + 1e-3) << "token " << v;
    }
  }
}

}  // namespace
}  // namespace loom
