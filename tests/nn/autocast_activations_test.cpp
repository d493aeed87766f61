// bf16 activations under AutocastGuard (loom/autocast.h), as torch.autocast
// ("cpu") keeps them in transformers' GPT-2 / BERT: a Linear's output with
// its bias is bf16, gelu / dropout of it stay bf16 (so the next matmul casts
// nothing), the branch added to the f32 residual stream gives f32, layer_norm
// of a bf16 input normalizes in f32 and returns bf16, cross_entropy of bf16
// logits is f32. Values are checked against f32 math on the same inputs (bf16
// tolerances) and eager against lazy; the gradients of the f32 weights are f32.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <map>

#include "loom/autocast.h"
#include "loom/nn.h"
#include "ops/compare.h"
#include "optim/optim_test_util.h"

namespace loom {
namespace {

Tensor as_f32_on_cpu(const Tensor& t) { return cast(t.to(Device("cpu")), DType::f32); }

class AutocastActivations : public ::testing::TestWithParam<std::string> {};

TEST_P(AutocastActivations, LinearWithBiasStaysBf16) {
  Device dev(GetParam());
  manual_seed(31);
  nn::Linear lin(24, 8);
  Tensor x = randn({3, 5, 24});
  Tensor expected_f32 = lin.forward(x);  // the same layer in f32, outside the guard
  // The bf16 linear of torch: bf16 operands, bf16 bias, bf16 result.
  Tensor w16 = cast(lin.weight(), DType::bf16), b16 = cast(lin.bias(), DType::bf16);
  Tensor expected_bf16 = matmul(cast(x, DType::bf16), w16, false, true) + b16;
  lin.to(dev);
  Tensor y;
  {
    AutocastGuard amp;
    y = lin.forward(x.to(dev));
  }
  EXPECT_EQ(y.dtype(), DType::bf16);
  testing::sync_if_lazy(dev);
  EXPECT_TRUE(testing::all_close(as_f32_on_cpu(y), as_f32_on_cpu(expected_bf16), 0, 0));
  EXPECT_TRUE(testing::all_close(as_f32_on_cpu(y), expected_f32, 2e-2, 2e-2));
}

TEST_P(AutocastActivations, LayerNormOfBf16ComputesInF32AndReturnsBf16) {
  Device dev(GetParam());
  manual_seed(32);
  Tensor x = cast(randn({4, 6, 32}) * 3.0 + 1.0, DType::bf16);
  Tensor w = randn({32}), b = randn({32});
  Tensor ref = layer_norm(cast(x, DType::f32), w, b, 1e-5);  // f32 math on the bf16 values
  Tensor y;
  {
    AutocastGuard amp;
    y = layer_norm(x.to(dev), w.to(dev), b.to(dev), 1e-5);
  }
  EXPECT_EQ(y.dtype(), DType::bf16);
  testing::sync_if_lazy(dev);
  // One rounding of the f32 result: within half a bf16 step (2^-8 relative).
  EXPECT_TRUE(testing::all_close(as_f32_on_cpu(y), ref, 1.0 / 256, 1e-6));
}

TEST_P(AutocastActivations, CrossEntropyOfBf16LogitsIsF32) {
  Device dev(GetParam());
  manual_seed(33);
  Tensor logits = cast(randn({6, 11}) * 4.0, DType::bf16);
  Tensor target = tensor_i64({0, 3, 10, 5, 5, 1}, {6});
  Tensor ref = cross_entropy(cast(logits, DType::f32), target);
  Tensor loss;
  {
    AutocastGuard amp;
    loss = cross_entropy(logits.to(dev), target.to(dev));
  }
  EXPECT_EQ(loss.dtype(), DType::f32);
  testing::sync_if_lazy(dev);
  EXPECT_NEAR(loss.item(), ref.item(), 1e-6);
}

// A GPT-2 block's MLP half and a head: ln(x + dropout(proj(gelu(fc(x))))) ->
// head -> cross_entropy, with the dtypes torch.autocast gives each value.
struct MlpStep {
  std::shared_ptr<nn::Linear> fc, proj, head;
  std::shared_ptr<nn::LayerNorm> ln;
};

MlpStep make_mlp_step() {
  manual_seed(34);
  return {std::make_shared<nn::Linear>(16, 64), std::make_shared<nn::Linear>(64, 16),
          std::make_shared<nn::Linear>(16, 10), std::make_shared<nn::LayerNorm>(16)};
}

// Runs one forward + backward on `dev`; returns the loss then every gradient.
std::vector<Tensor> run_mlp_step(MlpStep& m, const Device& dev, bool bf16, bool check_dtypes) {
  for (nn::Module* mod :
       std::initializer_list<nn::Module*>{m.fc.get(), m.proj.get(), m.head.get(), m.ln.get()})
    mod->to(dev);
  manual_seed(35);
  Tensor x = randn({4, 8, 16}).to(dev);
  Tensor target = tensor_i64({1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6,
                              7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2},
                             {4, 8})
                      .to(dev);
  Tensor loss;
  {
    AutocastGuard amp(bf16);
    Tensor h = m.fc->forward(x);
    Tensor g = gelu(h, "tanh");
    Tensor p = m.proj->forward(dropout(g, 0.1, true));
    Tensor r = x + dropout(p, 0.1, true);
    Tensor n = m.ln->forward(r);
    Tensor logits = m.head->forward(n);
    loss = cross_entropy(logits, target);
    if (check_dtypes) {
      EXPECT_EQ(h.dtype(), DType::bf16);
      EXPECT_EQ(g.dtype(), DType::bf16);  // the proj matmul casts nothing
      EXPECT_EQ(p.dtype(), DType::bf16);
      EXPECT_EQ(r.dtype(), DType::f32);  // bf16 branch + f32 residual stream
      EXPECT_EQ(n.dtype(), DType::f32);
      EXPECT_EQ(logits.dtype(), DType::bf16);
      EXPECT_EQ(loss.dtype(), DType::f32);
    }
  }
  loss.backward();
  std::vector<Tensor> out{loss};
  for (nn::Module* mod :
       std::initializer_list<nn::Module*>{m.fc.get(), m.proj.get(), m.head.get(), m.ln.get()})
    for (auto& [name, p] : mod->named_parameters()) {
      if (check_dtypes) EXPECT_EQ(p.grad().dtype(), DType::f32) << name;
      out.push_back(p.grad());
    }
  testing::sync_if_lazy(dev);
  for (Tensor& t : out) t = as_f32_on_cpu(t);
  return out;
}

TEST_P(AutocastActivations, MlpStepCloseToF32AndEagerMatchesLazy) {
  Device dev(GetParam());
  MlpStep m32 = make_mlp_step();
  std::vector<Tensor> f32 = run_mlp_step(m32, Device("cpu"), false, false);
  MlpStep m16 = make_mlp_step();
  std::vector<Tensor> bf16 = run_mlp_step(m16, dev, true, true);
  MlpStep e16 = make_mlp_step();
  std::vector<Tensor> eager = run_mlp_step(e16, Device("cpu"), true, false);
  ASSERT_EQ(bf16.size(), f32.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    // bf16 has 8 significant bits; gradients pass through several bf16 values.
    EXPECT_TRUE(testing::all_close(bf16[i], f32[i], 5e-2, 5e-3)) << "value " << i;
    // eager and lazy: the same ops; lazy's fused groups may skip a rounding.
    EXPECT_TRUE(testing::all_close(bf16[i], eager[i], 1e-2, 1e-3)) << "value " << i;
  }
}

// bf16 elementwise chains (the activations above) run fused on the lazy
// device, where each bf16 intermediate is rounded in the interpreter: bit for
// bit the eager result, ties to even, NaN, infinities and subnormals included.
TEST(AutocastActivationsFused, Bf16ChainRoundsLikeEager) {
  std::vector<float> v = {1.0f + 1.0f / 256,
                          1.0f + 3.0f / 256,
                          -2.5f,
                          3.3895e38f,
                          NAN,
                          INFINITY,
                          -INFINITY,
                          0.1f,
                          1e-40f,
                          -0.0f,
                          7.0f,
                          12345.678f,
                          -1e-3f,
                          65504.0f,
                          0.5f,
                          -3.1f};
  Tensor x = cast(from_blob(v.data(), {4, 4}, DType::f32), DType::bf16);
  auto chain = [](const Tensor& t) {
    Tensor y = gelu(t * 1.37 + t, "tanh") * t - 0.3;
    return tanh(y) + exp(t * 0.01) * y;
  };
  std::vector<float> eager = cast(chain(x), DType::f32).to_vector<float>();
  Tensor lazy = chain(x.to(Device("lazy")));
  lazy::mark_step();
  std::vector<float> got = cast(lazy.to(Device("cpu")), DType::f32).to_vector<float>();
  ASSERT_EQ(got.size(), eager.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(eager[i]))
        << "element " << i << ": lazy " << got[i] << ", eager " << eager[i];
}

// The gelu gradient of a bf16 value computes in f32 and rounds once (torch's
// gelu_backward): within one bf16 step of the f32 gradient at the same input,
// on both devices. Rounding after each op of the formula drifts further.
TEST_P(AutocastActivations, Bf16GeluGradientRoundsOnce) {
  Device dev(GetParam());
  manual_seed(36);
  Tensor x0 = cast(randn({512}) * 2.5, DType::bf16);
  for (const char* approx : {"none", "tanh"}) {
    Tensor x = x0.to(dev).detach().requires_grad_();
    sum(gelu(x, approx)).backward();
    testing::sync_if_lazy(dev);
    Tensor x32 = cast(x0, DType::f32).detach().requires_grad_();
    sum(gelu(x32, approx)).backward();
    EXPECT_EQ(x.grad().dtype(), DType::bf16);
    std::vector<float> got = as_f32_on_cpu(x.grad()).to_vector<float>();
    std::vector<float> want = x32.grad().to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], std::fabs(want[i]) / 128 + 1e-6) << approx << " element " << i;
  }
}

// torch.nn.MultiheadAttention's in-projection is a linear: under autocast q,
// k, v are bf16 with the bias cast (bit for bit the explicit bf16 ops).
TEST_P(AutocastActivations, MultiheadAttentionInProjectionIsBf16) {
  Device dev(GetParam());
  manual_seed(37);
  nn::MultiheadAttention mha(16, 4, 0.0);
  Tensor x = randn({2, 5, 16});
  std::map<std::string, Tensor> p;
  for (auto& [name, t] : mha.named_parameters()) p[name] = t;
  {
    NoGradGuard no_grad;  // torch initializes the biases to 0: give them values
    p.at("in_proj_bias").copy_(randn({48}));
    p.at("out_proj.bias").copy_(randn({16}));
  }
  Tensor expected;
  {
    AutocastGuard amp;
    std::vector<Tensor> w = split(p.at("in_proj_weight"), 16, 0),
                        b = split(p.at("in_proj_bias"), 16, 0);
    std::vector<Tensor> qkv;
    for (int i = 0; i < 3; ++i)
      qkv.push_back(matmul(cast(x, DType::bf16), cast(w[i], DType::bf16), false, true) +
                    cast(b[i], DType::bf16));
    nn::AttentionOptions o;
    Tensor a = nn::multi_head_attention(qkv[0], qkv[1], qkv[2], 4, o);
    expected =
        matmul(a, p.at("out_proj.weight"), false, true) + cast(p.at("out_proj.bias"), DType::bf16);
  }
  mha.to(dev);
  Tensor y;
  {
    AutocastGuard amp;
    y = mha.forward(x.to(dev), x.to(dev), x.to(dev));
  }
  EXPECT_EQ(y.dtype(), DType::bf16);
  testing::sync_if_lazy(dev);
  EXPECT_TRUE(testing::all_close(as_f32_on_cpu(y), as_f32_on_cpu(expected), 0, 0));
}

INSTANTIATE_TEST_SUITE_P(Devices, AutocastActivations, ::testing::Values("cpu", "lazy"));

}  // namespace
}  // namespace loom
