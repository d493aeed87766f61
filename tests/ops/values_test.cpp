// Hand-computed op values where the answer is known exactly, on both eager
// backends: GELU at known points (x * Phi(x), Phi from tables), softmax and
// log_softmax of [1, 2, 3], layer_norm of [1, 2, 3, 4], cross_entropy with
// ignore_index and label smoothing, causal attention on 2x2, PyTorch's type
// promotion (torch.result_type), casts, reductions with NaN and ties, index
// ops with repeated indices, index_copy and its gradient, and Philox streams (the Random123
// known-answer vector for counter 0, key 0). Constants were computed in double precision from the
// formulas named beside them.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/decompositions.h"
#include "loom/error.h"
#include "loom/ops.h"
#include "ops/compare.h"

namespace loom {
namespace {

using testing::all_close;

const std::vector<Device> kDevices = {Device("cpu:reference"), Device("cpu")};

TEST(OpValues, GeluAtKnownPoints) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    Tensor x = tensor({-3, -1, -0.5, 0, 0.5, 1, 3}, {7}, d);
    // x * Phi(x), Phi(1) = 0.8413447460685429, Phi(3) = 0.9986501019683699.
    EXPECT_TRUE(all_close(gelu(x),
                          {-0.00404969409489031, -0.15865525393145707, -0.15426876936299344, 0.0,
                           0.34573123063700656, 0.8413447460685429, 2.99595030590511},
                          1e-6, 1e-7));
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    EXPECT_TRUE(all_close(gelu(x, "tanh"),
                          {-0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0.0,
                           0.34571400982514394, 0.8411919906082768, 2.996362607918227},
                          1e-6, 1e-7));
  }
}

TEST(OpValues, SoftmaxOfAKnownRow) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    std::vector<double> p = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
    std::vector<double> logp = {-2.40760596444438, -1.4076059644443801, -0.40760596444438013};
    EXPECT_TRUE(all_close(softmax(tensor({1, 2, 3}, {3}, d)), p, 1e-6, 0));
    EXPECT_TRUE(all_close(log_softmax(tensor({1, 2, 3}, {3}, d)), logp, 1e-6, 0));
    // Shift invariance: no overflow at 1000.
    EXPECT_TRUE(all_close(softmax(tensor({1000, 1001, 1002}, {3}, d)), p, 1e-6, 0));
    // Along axis 0 of [[1, 5], [2, 5], [3, 5]]: columns are independent.
    Tensor cols = softmax(tensor({1, 5, 2, 5, 3, 5}, {3, 2}, d), 0);
    EXPECT_TRUE(all_close(cols, {p[0], 1.0 / 3, p[1], 1.0 / 3, p[2], 1.0 / 3}, 1e-6, 0));
    EXPECT_TRUE(all_close(softmax(tensor({7}, {}, d)), {1.0}, 0, 0));
  }
}

TEST(OpValues, LayerNormOfAKnownRow) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    // mean 2.5, biased var 1.25: (x - 2.5) / sqrt(1.25 + 1e-5) * w + b.
    Tensor y = layer_norm(tensor({1, 2, 3, 4}, {1, 4}, d), tensor({1, 2, 1, 2}, {4}, d),
                          tensor({0, 1, 0, -1}, {4}, d), 1e-5);
    EXPECT_TRUE(all_close(
        y, {-1.3416354199689269, 0.105576386687382, 0.447211806656309, 1.6832708399378538}, 1e-6,
        1e-7));
    // One channel: the variance is 0, so the output is the bias.
    Tensor one = layer_norm(tensor({3, -7}, {2, 1}, d), tensor({2}, {1}, d), tensor({0.5}, {1}, d));
    EXPECT_TRUE(all_close(one, {0.5, 0.5}, 0, 0));
  }
}

TEST(OpValues, CrossEntropyWithIgnoreIndexAndLabelSmoothing) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    Tensor logits = tensor({1, 2, 3, 1, 1, 1, 0, 0, 5}, {3, 3}, d);
    Tensor target = tensor_i64({2, -100, 0}, {3}, d);
    // Rows 0 and 2 count: (lse0 - 3 + lse2 - 0) / 2, lse = log sum exp.
    EXPECT_TRUE(all_close(cross_entropy(logits, target), {2.710495933082915}, 1e-6, 0));
    // (1 - 0.1) * nll + 0.1 / C * sum_k (lse - x_k), averaged over rows 0, 2.
    EXPECT_TRUE(all_close(cross_entropy(logits, target, -100, 0.1), {2.6771625997495816}, 1e-6, 0));
    // ignore_index 0 skips row 2 instead: only row 0 (target 2) and row 1
    // (target -100 is then a real, out-of-range class: error).
    EXPECT_THROW(cross_entropy(logits, target, 0), Error);
    // Every target ignored: NaN, as PyTorch.
    Tensor none = cross_entropy(logits, tensor_i64({-100, -100, -100}, {3}, d));
    EXPECT_TRUE(std::isnan(none.item()));
    EXPECT_EQ(none.shape(), Shape{});
  }
}

TEST(OpValues, CausalAttentionOn2x2) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    Tensor q = tensor({1, 0, 0, 1}, {2, 2}, d), v = tensor({1, 2, 3, 4}, {2, 2}, d);
    // Row 0 sees only key 0 -> v0. Row 1: scores (0, 1/sqrt 2), softmax
    // p = (1, e^{0.7071}) / (1 + e^{0.7071}) -> p0 v0 + p1 v1.
    Tensor out = scaled_dot_product_attention(q, q, v, Tensor(), true);
    EXPECT_TRUE(all_close(out, {1, 2, 2.3395230986533138, 3.3395230986533138}, 1e-6, 0));
    // The same through a bool mask (true = attend) instead of causal.
    Tensor lower = tensor({1, 0, 1, 1}, {2, 2}, d).to(DType::boolean);
    EXPECT_TRUE(all_close(scaled_dot_product_attention(q, q, v, lower), out, 1e-6, 0));
    // A float mask of -inf above the diagonal.
    Tensor additive = tensor({0, -INFINITY, 0, 0}, {2, 2}, d);
    EXPECT_TRUE(all_close(scaled_dot_product_attention(q, q, v, additive), out, 1e-6, 0));
    // A row with nothing to attend gives zeros; row 1 attends both keys.
    Tensor none = tensor({0, 0, 1, 1}, {2, 2}, d).to(DType::boolean);
    EXPECT_TRUE(all_close(scaled_dot_product_attention(q, q, v, none),
                          {0, 0, 2.3395230986533138, 3.3395230986533138}, 1e-6, 0));
  }
}

// The decomposition autograd differentiates must agree with the kernel.
TEST(OpValues, AttentionDecompositionMatchesKernel) {
  const Device d("cpu:reference");
  manual_seed(5);
  Tensor q = randn({2, 3, 4}, DType::f32, d), k = randn({2, 5, 4}, DType::f32, d);
  Tensor v = randn({2, 5, 3}, DType::f32, d);
  // Random keep-mask with key 0 always kept, and one with row 1 all masked.
  Tensor bmask =
      tensor({1, 0, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1}, {3, 5}, d).to(DType::boolean);
  Tensor dead_row =
      tensor({1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1}, {3, 5}, d).to(DType::boolean);
  Tensor fmask = randn({2, 1, 5}, DType::f32, d);
  struct Config {
    Tensor mask;
    bool causal;
    double scale;
  };
  for (const Config& c : std::vector<Config>{{Tensor(), false, 0.0},
                                             {Tensor(), true, 0.0},
                                             {bmask, false, 0.7},
                                             {bmask, true, 0.0},
                                             {dead_row, false, 0.0},
                                             {fmask, true, 0.0}}) {
    Tensor kernel = scaled_dot_product_attention(q, k, v, c.mask, c.causal, c.scale);
    Tensor decomposed = autograd::attention_decomposed(q, k, v, c.mask, c.causal, c.scale);
    EXPECT_TRUE(all_close(decomposed, kernel, 1e-5, 1e-6));
  }
}

// Grouped-query attention (k, v with fewer heads) against transformers'
// repeat_kv written out with expand: values and every gradient (k's and v's
// sum over their group of q heads), on both eager backends.
TEST(OpValues, GroupedQueryAttentionEqualsRepeatedKeyValues) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    manual_seed(7);
    Tensor q0 = randn({2, 4, 5, 3}, DType::f32, d), k0 = randn({2, 2, 5, 3}, DType::f32, d);
    Tensor v0 = randn({2, 2, 5, 3}, DType::f32, d), g = randn({2, 4, 5, 3}, DType::f32, d);
    auto run = [&](bool repeat, std::vector<Tensor>* grads) {
      Tensor q = q0.detach().requires_grad_(), k = k0.detach().requires_grad_();
      Tensor v = v0.detach().requires_grad_();
      auto rep = [&](const Tensor& x) {
        if (!repeat) return x;
        return reshape(expand(reshape(x, {2, 2, 1, 5, 3}), {2, 2, 2, 5, 3}), {2, 4, 5, 3});
      };
      Tensor out = scaled_dot_product_attention(q, rep(k), rep(v), Tensor(), true);
      out.backward(g);
      *grads = {q.grad(), k.grad(), v.grad()};
      return out;
    };
    std::vector<Tensor> grouped_grads, repeated_grads;
    Tensor grouped = run(false, &grouped_grads), repeated = run(true, &repeated_grads);
    EXPECT_TRUE(all_close(grouped, repeated, 1e-6, 1e-7));
    for (int i = 0; i < 3; ++i)
      EXPECT_TRUE(all_close(grouped_grads[i], repeated_grads[i], 1e-5, 1e-6)) << "grad " << i;
  }
}

TEST(OpValues, ReductionsWithTiesNaNAndEmpty) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    Tensor x = tensor({1, 2, 3, 4}, {4}, d);
    EXPECT_TRUE(all_close(var(x), {5.0 / 3.0}, 1e-6, 0));    // sum (x - 2.5)^2 / 3
    EXPECT_TRUE(all_close(var(x, {}, 0), {1.25}, 1e-6, 0));  // ... / 4
    EXPECT_TRUE(all_close(mean(x), {2.5}, 0, 0));
    Tensor ties = tensor({1, 3, 3, 2, 5, 5}, {2, 3}, d);
    EXPECT_TRUE(all_close(argmax(ties, 1), {1, 1}, 0, 0));  // first maximum
    EXPECT_EQ(argmax(ties, 1).dtype(), DType::i64);
    EXPECT_TRUE(all_close(argmax(tensor({1, NAN, 3}, {3}, d), 0), {1}, 0, 0));  // NaN is max
    EXPECT_TRUE(std::isnan(max(tensor({1, NAN, 3}, {3}, d)).item()));
    EXPECT_TRUE(std::isnan(min(tensor({1, NAN, 3}, {3}, d)).item()));
    Tensor empty = zeros({0, 2}, DType::f32, d);
    EXPECT_TRUE(all_close(sum(empty, {0}), {0, 0}, 0, 0));
    EXPECT_TRUE(std::isnan(mean(empty).item()));
    // A rank-0 operand reduces over its (only) axis 0, as torch.sum(t, 0).
    Tensor s = tensor({3}, {}, d);
    EXPECT_TRUE(all_close(sum(s, {0}), {3}, 0, 0));
    EXPECT_EQ(sum(s, {0}, true).shape(), Shape{});
    EXPECT_TRUE(all_close(max(s, {-1}), {3}, 0, 0));
    EXPECT_TRUE(all_close(argmax(s, 0), {0.0}, 0, 0));
    // Integer and bool sums are int64.
    Tensor b = tensor({1, 0, 1}, {3}, d).to(DType::boolean);
    EXPECT_EQ(sum(b).dtype(), DType::i64);
    EXPECT_TRUE(all_close(sum(b), {2}, 0, 0));
  }
}

TEST(OpValues, MatmulTransposeFlags) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    Tensor a = tensor({1, 2, 3, 4}, {2, 2}, d);
    EXPECT_TRUE(all_close(matmul(a, a, true, false), {10, 14, 14, 20}, 0, 0));  // a^T a
    EXPECT_TRUE(all_close(matmul(a, a, false, true), {5, 11, 11, 25}, 0, 0));   // a a^T
    EXPECT_TRUE(all_close(matmul(a, a, true, true), {7, 15, 10, 22}, 0, 0));    // a^T a^T
    // A batch of two against one shared rhs: [2,1,2] x [2,2].
    Tensor rows = tensor({1, 0, 0, 1}, {2, 1, 2}, d);
    Tensor out = matmul(rows, a);
    EXPECT_EQ(out.shape(), (Shape{2, 1, 2}));
    EXPECT_TRUE(all_close(out, {1, 2, 3, 4}, 0, 0));
    EXPECT_TRUE(all_close(matmul(zeros({2, 0}, DType::f32, d), zeros({0, 3}, DType::f32, d)),
                          std::vector<double>(6, 0.0), 0, 0));
  }
}

TEST(OpValues, IndexOpsAccumulateRepeats) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, d);
    // gather along 1: out[i][j] = x[i][idx[i][j]].
    EXPECT_TRUE(all_close(gather(x, 1, tensor_i64({2, 0, 1, 1}, {2, 2}, d)), {3, 1, 5, 5}, 0, 0));
    // scatter_add along 1 with a repeated index: row 0 gets 10+20 at col 2.
    Tensor src = tensor({10, 20, 30, 40}, {2, 2}, d);
    EXPECT_TRUE(all_close(scatter_add(x, 1, tensor_i64({2, 2, 0, 1}, {2, 2}, d), src),
                          {1, 2, 33, 34, 45, 6}, 0, 0));
    // index_add along 0 with index [1, 1]: both source rows land in row 1.
    Tensor rows = tensor({1, 1, 1, 2, 2, 2}, {2, 3}, d);
    EXPECT_TRUE(
        all_close(index_add(x, 0, tensor_i64({1, 1}, {2}, d), rows), {1, 2, 3, 7, 8, 9}, 0, 0));
    EXPECT_TRUE(
        all_close(index_select(x, 1, tensor_i64({2, 2, 0}, {3}, d)), {3, 3, 1, 6, 6, 4}, 0, 0));
    Tensor w = tensor({0, 1, 10, 11, 20, 21}, {3, 2}, d);
    Tensor e = embedding(w, tensor_i64({2, 0, 2}, {3}, d).to(DType::i32));
    EXPECT_EQ(e.shape(), (Shape{3, 2}));
    EXPECT_TRUE(all_close(e, {20, 21, 0, 1, 20, 21}, 0, 0));
    Tensor h = one_hot(tensor_i64({1, 0, 2}, {3}, d), 3);
    EXPECT_EQ(h.dtype(), DType::i64);
    EXPECT_TRUE(all_close(h, {0, 1, 0, 1, 0, 0, 0, 0, 1}, 0, 0));
  }
}

TEST(OpValues, IndexCopyReplacesTheIndexedSlices) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    Tensor x = tensor({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3}, d);
    Tensor rows = tensor({-1, -2, -3, -4, -5, -6}, {2, 3}, d);
    // Rows 3 and 1 replaced by the source's rows 0 and 1; rows 0 and 2 kept.
    EXPECT_TRUE(all_close(index_copy(x, 0, tensor_i64({3, 1}, {2}, d), rows),
                          {1, 2, 3, -4, -5, -6, 7, 8, 9, -1, -2, -3}, 0, 0));
    // Along axis 1 with an i32 index: column 2 <- source column 0, column 0
    // <- source column 1, in every row.
    Tensor y = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, d);
    Tensor cols = tensor({10, 20, 30, 40}, {2, 2}, d);
    EXPECT_TRUE(all_close(index_copy(y, 1, tensor_i64({2, 0}, {2}, d).to(DType::i32), cols),
                          {20, 2, 10, 40, 5, 30}, 0, 0));
    // A KV cache [B=1, H=2, L=4, D=2]: row 2 of each head written.
    Tensor cache = zeros({1, 2, 4, 2}, DType::f32, d);
    Tensor kv = tensor({1, 2, 3, 4}, {1, 2, 1, 2}, d);
    EXPECT_TRUE(all_close(index_copy(cache, 2, tensor_i64({2}, {1}, d), kv),
                          {0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4, 0, 0}, 0, 0));
    // A repeated index: the last source row wins (torch leaves it unspecified).
    EXPECT_TRUE(all_close(index_copy(x, 0, tensor_i64({1, 1}, {2}, d), rows),
                          {1, 2, 3, -4, -5, -6, 7, 8, 9, 10, 11, 12}, 0, 0));
    // Bool and i64 elements move unchanged.
    Tensor flags = tensor_i64({0, 0, 0}, {3}, d).to(DType::boolean);
    Tensor on = tensor_i64({1}, {1}, d).to(DType::boolean);
    Tensor set = index_copy(flags, 0, tensor_i64({1}, {1}, d), on);
    EXPECT_EQ(set.dtype(), DType::boolean);
    EXPECT_EQ(set.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
    Tensor big = tensor_i64({int64_t{1} << 40, 7}, {2}, d);
    EXPECT_EQ(index_copy(big, 0, tensor_i64({1}, {1}, d), tensor_i64({-(int64_t{1} << 41)}, {1}, d))
                  .to_vector<int64_t>(),
              (std::vector<int64_t>{int64_t{1} << 40, -(int64_t{1} << 41)}));
  }
}

TEST(OpValues, IndexCopyGradientZeroesTheReplacedRows) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    Tensor x = zeros({4, 2}, DType::f32, d).requires_grad_();
    Tensor src = zeros({2, 2}, DType::f32, d).requires_grad_();
    Tensor g = tensor({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, d);
    index_copy(x, 0, tensor_i64({3, 1}, {2}, d), src).backward(g);
    // x's rows 1 and 3 were replaced: no gradient reaches them.
    EXPECT_TRUE(all_close(x.grad(), {1, 2, 0, 0, 5, 6, 0, 0}, 0, 0));
    // src row 0 went to row 3, src row 1 to row 1.
    EXPECT_TRUE(all_close(src.grad(), {7, 8, 3, 4}, 0, 0));
  }
}

TEST(OpValues, EmbeddingGradientScatterAddsRepeatedIds) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    Tensor w = zeros({3, 2}, DType::f32, d).requires_grad_();
    Tensor ids = tensor_i64({2, 0, 2, 2}, {2, 2}, d);
    Tensor g = tensor({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}, d);
    embedding(w, ids).backward(g);
    // Row 0 <- (3,4); row 2 <- (1,2)+(5,6)+(7,8); row 1 untouched.
    EXPECT_TRUE(all_close(w.grad(), {3, 4, 0, 0, 13, 16}, 0, 0));
  }
}

TEST(OpValues, PhiloxStreams) {
  for (const Device& d : kDevices) {
    SCOPED_TRACE(d.str());
    // Random123 known answer: Philox4x32-10, counter 0, key 0 ->
    // 6627e8d5 e169c58d bc57ac4c 9b00dbd8; uniform = (word >> 8) * 2^-24.
    manual_seed(0);
    EXPECT_TRUE(all_close(rand({4}, DType::f32, d),
                          {0x6627e8 / 16777216.0, 0xe169c5 / 16777216.0, 0xbc57ac / 16777216.0,
                           0x9b00db / 16777216.0},
                          0, 0));
    // dropout keeps element i iff uniform(i) >= p, scaled by 1 / (1 - p):
    // the same (seed, offset) as a rand() draw gives the mask.
    Tensor x = tensor(std::vector<float>(40, 2.0f), {5, 8}, d);
    manual_seed(77);
    std::vector<float> u = rand({40}, DType::f32, d).to_vector<float>();
    manual_seed(77);
    std::vector<float> y = dropout(x, 0.3).to_vector<float>();
    int kept = 0;
    for (size_t i = 0; i < u.size(); ++i) {
      EXPECT_FLOAT_EQ(y[i], u[i] >= 0.3f ? 2.0f / 0.7f : 0.0f) << i;
      kept += u[i] >= 0.3f;
    }
    EXPECT_GT(kept, 15);
    EXPECT_LT(kept, 40);
    // normal = Box-Muller on uniforms 2i and 2i+1.
    manual_seed(9);
    std::vector<double> uu = rand({6}, DType::f32, d).to_vector<double>();
    manual_seed(9);
    std::vector<double> n = randn({3}, DType::f32, d).to_vector<double>();
    for (size_t i = 0; i < 3; ++i)
      EXPECT_NEAR(
          n[i], std::sqrt(-2 * std::log(1 - uu[2 * i])) * std::cos(2 * M_PI * uu[2 * i + 1]), 1e-6);
    // Successive draws advance the offset: different streams.
    manual_seed(0);
    Tensor first = rand({4}, DType::f32, d), second = rand({4}, DType::f32, d);
    EXPECT_FALSE(all_close(first, second, 0, 0));
  }
}

}  // namespace
}  // namespace loom
