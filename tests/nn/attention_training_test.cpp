// Attention in training (issue 16, deliverable 3): the attention op with
// dropout on its probabilities and its fused backward (attention_backward)
// against the paths they replace, on both eager backends:
//  - forward: the written-out path models used before (matmul -> scale ->
//    mask -> softmax -> dropout op -> matmul, masked scores at -FLT_MAX) with
//    the same generator state: the same keep decisions, so equal to float
//    rounding, and the generator advanced by the same one draw;
//  - gradients: dq, dk, dv from attention_backward vs autograd through the
//    decomposition (autograd/decompositions.h) with the same generator
//    operand, over causal / padding / float masks, GQA, several 32-row
//    blocks, with and without dropout;
//  - bf16 operands vs f32 on the same (bf16-rounded) values;
//  - the lazy device: one compile for repeated steps, values equal eager.
// Finite differences of the op (and cpu-vs-reference of attention_backward)
// run from the op table (tests/ops/op_cases_attention_training_test.cpp).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "../lazy/lazy_test_util.h"
#include "autograd/decompositions.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/nn.h"
#include "loom/ops.h"
#include "ops/compare.h"

namespace loom {
namespace {

using testing::all_close;

const std::vector<Device> kEagerDevices = {Device("cpu"), Device("cpu:reference")};

// The pre-fusion training path of nn::multi_head_attention (transformers'
// eager_attention_forward): dropout on softmax of lowest-float-masked scores.
Tensor written_out_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             bool causal, double p) {
  Tensor scores = matmul(q, k, false, true) * (1.0 / std::sqrt(double(q.size(-1))));
  Tensor keep;
  if (causal) {
    int64_t t = q.size(-2), s = k.size(-2);
    keep = ge(reshape(arange(t, DType::i64, q.device()), {t, 1}),
              reshape(arange(s, DType::i64, q.device()), {1, s}));
  }
  if (mask.defined() && mask.dtype() == DType::boolean)
    keep = keep.defined() ? where(keep, mask, keep) : mask;
  else if (mask.defined())
    scores = scores + mask;
  if (keep.defined()) scores = where(keep, scores, -FLT_MAX);
  return matmul(dropout(softmax(scores, -1), p, true), v);
}

struct Config {
  const char* name;
  int64_t b, h, hkv, t, s, d;
  bool causal;
  int mask;  // 0 none, 1 bool key padding [B,1,1,S], 2 float [B,1,1,S]
  double p;
};

const std::vector<Config>& configs() {
  static const std::vector<Config> c = {
      {"plain", 2, 2, 2, 5, 5, 4, false, 0, 0.0},
      {"dropout", 2, 2, 2, 5, 6, 4, false, 0, 0.3},
      {"dropout_causal", 1, 3, 3, 7, 7, 4, true, 0, 0.5},
      {"dropout_padding", 3, 2, 2, 6, 6, 8, false, 1, 0.1},
      {"dropout_causal_padding_blocks", 2, 2, 2, 45, 45, 8, true, 1, 0.1},
      {"dropout_float_mask", 2, 2, 2, 4, 6, 4, false, 2, 0.2},
      {"no_dropout_padding_blocks", 2, 1, 1, 70, 33, 4, false, 1, 0.0},
  };
  return c;
}

// Key-padding masks leave at least one key per item (no empty rows).
Tensor make_mask(const Config& c, const Device& dev) {
  if (c.mask == 0) return Tensor();
  std::vector<float> m(c.b * c.s, 1.0f);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t j = c.s - b; j < c.s; ++j) m[b * c.s + j] = c.mask == 1 ? 0.0f : -1e9f;
  if (c.mask == 2) m[1] = -0.75f;
  Tensor t = tensor(m, {c.b, 1, 1, c.s}, dev);
  return c.mask == 1 ? t.to(DType::boolean) : t;
}

TEST(AttentionTraining, DropoutForwardMatchesWrittenOutPath) {
  for (const Device& dev : kEagerDevices)
    for (const Config& c : configs()) {
      if (c.hkv != c.h) continue;  // the written-out path has no GQA
      SCOPED_TRACE(std::string(c.name) + " on " + dev.str());
      manual_seed(31);
      Tensor q = randn({c.b, c.h, c.t, c.d}).to(dev), k = randn({c.b, c.h, c.s, c.d}).to(dev);
      Tensor v = randn({c.b, c.h, c.s, c.d}).to(dev), mask = make_mask(c, dev);
      GeneratorState before = generator_state();
      Tensor fused = scaled_dot_product_attention(q, k, v, mask, c.causal, 0.0, c.p);
      GeneratorState after = generator_state();
      set_generator_state(before);
      Tensor written = written_out_attention(q, k, v, mask, c.causal, c.p);
      EXPECT_EQ(generator_state().offset, after.offset) << "one draw, as dropout()";
      EXPECT_TRUE(all_close(fused, written, 1e-5, 1e-6));
    }
}

// out and dq, dk, dv of one attention call, through the op (rule:
// attention_backward) or the decomposition, with the same generator.
std::vector<Tensor> run_attention(const Config& c, const std::vector<Tensor>& qkv,
                                  const Tensor& mask, const Tensor& g, bool decomposed) {
  std::vector<Tensor> x;
  for (const Tensor& t : qkv) x.push_back(t.detach().requires_grad_());
  manual_seed(77);
  GeneratorState st = generator_state();
  Tensor gen = tensor_i64({int64_t(st.seed), int64_t(st.offset)}, {2}, qkv[0].device());
  Tensor out = decomposed
                   ? autograd::attention_decomposed(x[0], x[1], x[2], mask, c.causal, 0.0, c.p, gen)
                   : scaled_dot_product_attention(x[0], x[1], x[2], mask, c.causal, 0.0, c.p);
  out.backward(g);
  return {out, x[0].grad(), x[1].grad(), x[2].grad()};
}

std::vector<Config> gradient_configs() {
  std::vector<Config> c = configs();
  c.push_back({"dropout_gqa_causal", 2, 4, 2, 9, 9, 4, true, 0, 0.25});
  c.push_back({"gqa_padding_blocks", 1, 6, 2, 35, 35, 4, false, 1, 0.1});
  return c;
}

TEST(AttentionTraining, GradientsMatchDecomposition) {
  for (const Device& dev : kEagerDevices)
    for (const Config& c : gradient_configs()) {
      SCOPED_TRACE(std::string(c.name) + " on " + dev.str());
      manual_seed(5);
      std::vector<Tensor> qkv = {randn({c.b, c.h, c.t, c.d}).to(dev),
                                 randn({c.b, c.hkv, c.s, c.d}).to(dev),
                                 randn({c.b, c.hkv, c.s, c.d}).to(dev)};
      Tensor g = randn({c.b, c.h, c.t, c.d}).to(dev), mask = make_mask(c, dev);
      std::vector<Tensor> fused = run_attention(c, qkv, mask, g, false);
      std::vector<Tensor> ref = run_attention(c, qkv, mask, g, true);
      const char* what[] = {"out", "dq", "dk", "dv"};
      for (int i = 0; i < 4; ++i) EXPECT_TRUE(all_close(fused[i], ref[i], 1e-5, 1e-5)) << what[i];
    }
}

TEST(AttentionTraining, Bf16OperandsMatchF32WithinBf16Rounding) {
  const Device dev("cpu");
  for (const Config& c : gradient_configs()) {
    if (c.p == 0 && c.mask == 0) continue;
    SCOPED_TRACE(c.name);
    manual_seed(9);
    // Values exact in bf16, so both runs see the same operands.
    std::vector<Tensor> q16 = {randn({c.b, c.h, c.t, c.d}).to(DType::bf16),
                               randn({c.b, c.hkv, c.s, c.d}).to(DType::bf16),
                               randn({c.b, c.hkv, c.s, c.d}).to(DType::bf16)};
    Tensor g16 = randn({c.b, c.h, c.t, c.d}).to(DType::bf16), mask = make_mask(c, dev);
    std::vector<Tensor> q32;
    for (const Tensor& t : q16) q32.push_back(t.to(DType::f32));
    std::vector<Tensor> low = run_attention(c, q16, mask, g16, false);
    std::vector<Tensor> full = run_attention(c, q32, mask, g16.to(DType::f32), false);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(low[i].dtype(), DType::bf16) << i;
      EXPECT_TRUE(all_close(low[i].to(DType::f32), full[i], 2e-2, 2e-2)) << i;
    }
  }
}

TEST(AttentionTraining, LazyStepsCompileOnceAndMatchEager) {
  const Config c = configs()[4];  // causal + padding + dropout, two blocks
  manual_seed(3);
  std::vector<Tensor> qkv = {randn({c.b, c.h, c.t, c.d}), randn({c.b, c.h, c.s, c.d}),
                             randn({c.b, c.h, c.s, c.d})};
  Tensor g = randn({c.b, c.h, c.t, c.d});
  Tensor mask = make_mask(c, Device("cpu"));
  std::vector<Tensor> eager = run_attention(c, qkv, mask, g, false);
  const Device lz("lazy");
  std::vector<Tensor> lqkv;
  for (const Tensor& t : qkv) lqkv.push_back(t.to(lz));
  testing::reset_lazy();
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> lazy_out = run_attention(c, lqkv, mask.to(lz), g.to(lz), false);
    lazy::mark_step();
    for (int i = 0; i < 4; ++i)
      EXPECT_TRUE(all_close(lazy_out[i].to(Device("cpu")), eager[i], 1e-6, 1e-6)) << i;
  }
  EXPECT_EQ(metrics::counter("UncachedCompile"), 1);
  EXPECT_EQ(metrics::counter("CachedCompile"), 2);
}

// multi_head_attention in training draws its dropout inside the op: the
// same as the written-out path on the split heads.
TEST(AttentionTraining, MultiHeadAttentionTrainingUsesOpDropout) {
  manual_seed(21);
  Tensor q = randn({2, 6, 8}), k = randn({2, 6, 8}), v = randn({2, 6, 8});
  nn::AttentionOptions o;
  o.mask = reshape(tensor_i64({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 6}).to(DType::boolean),
                   {2, 1, 1, 6});
  o.causal = true;
  o.training = true;
  o.dropout_p = 0.4;
  GeneratorState st = generator_state();
  Tensor fused = nn::multi_head_attention(q, k, v, 2, o);
  set_generator_state(st);
  auto heads = [](const Tensor& x) { return transpose(reshape(x, {2, 6, 2, 4}), 1, 2); };
  Tensor written = written_out_attention(heads(q), heads(k), heads(v), o.mask, true, 0.4);
  written = reshape(transpose(written, 1, 2), {2, 6, 8});
  EXPECT_TRUE(all_close(fused, written, 1e-5, 1e-6));
}

}  // namespace
}  // namespace loom
