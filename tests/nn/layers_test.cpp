// nn layers against torch.nn (tests/fixtures/models/layers.safetensors,
// written by tools/make_model_fixtures.py): outputs and the gradients of
// sum(out * R) for Linear, LayerNorm, Embedding with padding_idx, GELU (both
// forms) and MultiheadAttention with a key-padding mask; plus Conv1D's
// layout, Dropout's modes and the activation names.
#include <gtest/gtest.h>

#include "nn/model_test_util.h"

namespace loom {
namespace {

using testing::close_scaled;

const testing::Golden& layers() {
  static testing::Golden g = testing::load_golden(testing::model_fixture("layers.safetensors"));
  return g;
}

// Copies the fixture's parameters "<layer>.<name>" into the module.
void load_params(nn::Module& m, const std::string& layer) {
  nn::StateDict dict;
  for (auto& [name, t] : m.state_dict()) dict.insert(name, layers().at(layer + "." + name));
  m.load_state_dict(dict);
}

// Backpropagates sum(out * R) and checks out and every gradient.
void check_layer(nn::Module& m, const std::string& layer, const Tensor& x, const Tensor& out) {
  const auto& g = layers();
  EXPECT_TRUE(close_scaled(out, g.at(layer + ".out"), 1e-5)) << layer << " out";
  sum(out * g.at(layer + ".R")).backward();
  if (x.defined() && g.has(layer + ".grad.x"))
    EXPECT_TRUE(close_scaled(x.grad(), g.at(layer + ".grad.x"), 1e-5)) << layer << " grad x";
  for (auto& [name, p] : m.named_parameters())
    EXPECT_TRUE(close_scaled(p.grad(), g.at(layer + ".grad." + name), 1e-5))
        << layer << " grad " << name;
}

Tensor input(const std::string& layer) {
  return layers().at(layer + ".x").to(Device("cpu")).detach().requires_grad_();
}

TEST(Layers, LinearMatchesTorch) {
  nn::Linear lin(6, 5);
  load_params(lin, "linear");
  Tensor x = input("linear");
  check_layer(lin, "linear", x, lin.forward(x));
  EXPECT_THROW(lin.forward(zeros({2, 4})), Error);
}

TEST(Layers, Conv1DIsLinearWithTheWeightTransposed) {
  nn::Linear lin(6, 5);
  load_params(lin, "linear");
  nn::Conv1D conv(5, 6);  // nf = out, nx = in
  EXPECT_EQ(conv.weight().shape(), (Shape{6, 5}));
  nn::StateDict dict;
  dict.insert("weight", transpose(layers().at("linear.weight"), 0, 1));
  dict.insert("bias", layers().at("linear.bias"));
  conv.load_state_dict(dict);
  Tensor x = layers().at("linear.x");
  EXPECT_TRUE(close_scaled(conv.forward(x), layers().at("linear.out"), 1e-5));
}

TEST(Layers, LayerNormMatchesTorch) {
  nn::LayerNorm ln(6);
  load_params(ln, "layer_norm");
  Tensor x = input("layer_norm");
  check_layer(ln, "layer_norm", x, ln.forward(x));
}

TEST(Layers, EmbeddingPaddingRowIsReadButNotTrained) {
  nn::Embedding emb(10, 4, 2);
  load_params(emb, "embedding");
  Tensor out = emb.forward(layers().at("embedding.ids"));
  check_layer(emb, "embedding", Tensor(), out);
  // The torch fixture's pad row is non-zero: forward used it, backward gave 0.
  std::vector<float> g = emb.weight().grad().to_vector<float>();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(g[2 * 4 + j], 0.0f);
  nn::Embedding fresh(10, 4, -1);  // negative padding_idx counts from the end, as torch
  EXPECT_EQ(*fresh.padding_idx(), 9);
  std::vector<float> w = fresh.weight().to_vector<float>();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(w[9 * 4 + j], 0.0f) << "pad row initialized to zero";
  EXPECT_THROW(nn::Embedding(10, 4, 10), Error);
}

TEST(Layers, GeluBothFormsMatchTorch) {
  for (auto [layer, act] : {std::pair{"gelu", "gelu"}, std::pair{"gelu_tanh", "gelu_new"}}) {
    nn::Activation a(act);
    Tensor x = input(layer);
    check_layer(a, layer, x, a.forward(x));
  }
  nn::GELU g("tanh");
  EXPECT_TRUE(
      close_scaled(g.forward(layers().at("gelu_tanh.x")), layers().at("gelu_tanh.out"), 1e-5));
  EXPECT_THROW(nn::Activation("gelu_approx"), Error);
  EXPECT_THROW(nn::GELU("fast"), Error);
}

TEST(Layers, ActivationNamesComputeTheirFormulas) {
  Tensor x = tensor({-2.0f, -0.5f, 0.0f, 1.5f}, {4});
  std::vector<double> v = x.to_vector<double>();
  auto check = [&](const char* name, auto f) {
    std::vector<double> expected;
    for (double xi : v) expected.push_back(f(xi));
    EXPECT_TRUE(testing::all_close(nn::activation(name, x), expected, 1e-6, 1e-7)) << name;
  };
  auto sig = [](double z) { return 1.0 / (1.0 + std::exp(-z)); };
  check("quick_gelu", [&](double z) { return z * sig(1.702 * z); });
  check("silu", [&](double z) { return z * sig(z); });
  check("relu", [](double z) { return z > 0 ? z : 0.0; });
  check("tanh", [](double z) { return std::tanh(z); });
  check("gelu_fast", [](double z) {
    return 0.5 * z * (1 + std::tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
  });
}

TEST(Layers, MultiheadAttentionWithPaddingMaskMatchesTorch) {
  nn::MultiheadAttention mha(8, 2);
  load_params(mha, "mha");
  mha.eval();
  Tensor x = input("mha");
  check_layer(mha, "mha", x, mha.forward(x, x, x, layers().at("mha.mask")));
}

TEST(Layers, DropoutOnlyInTrainingMode) {
  nn::Dropout d(0.5);
  Tensor x = ones({1000});
  manual_seed(3);
  std::vector<float> y = d.forward(x).to_vector<float>();
  int zeros_seen = 0;
  for (float v : y) {
    EXPECT_TRUE(v == 0.0f || v == 2.0f) << v;  // inverted dropout: kept values scale by 1/(1-p)
    zeros_seen += v == 0.0f;
  }
  EXPECT_GT(zeros_seen, 400);
  EXPECT_LT(zeros_seen, 600);
  d.eval();
  EXPECT_EQ(d.forward(x).to_vector<float>(), std::vector<float>(1000, 1.0f));
  EXPECT_THROW(nn::Dropout(1.0), Error);
}

TEST(Layers, AttentionDropoutPathEqualsFusedPathWithoutDropout) {
  // With p -> 0 the written-out path (used when dropout applies) must equal the
  // fused scaled_dot_product_attention path, masks included.
  manual_seed(11);
  Tensor q = randn({2, 4, 8}), k = randn({2, 4, 8}), v = randn({2, 4, 8});
  nn::AttentionOptions o;
  o.mask = reshape(tensor_i64({1, 1, 1, 1, 1, 1, 0, 0}, {2, 4}).to(DType::boolean), {2, 1, 1, 4});
  o.causal = true;
  Tensor fused = nn::multi_head_attention(q, k, v, 2, o);
  o.training = true;
  o.dropout_p = 1e-12;
  Tensor written = nn::multi_head_attention(q, k, v, 2, o);
  EXPECT_TRUE(testing::all_close(written, fused, 1e-5, 1e-6));
  EXPECT_THROW(nn::multi_head_attention(q, k, v, 3), Error);
}

}  // namespace
}  // namespace loom
