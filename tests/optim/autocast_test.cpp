// Autocast (loom/autocast.h): under an AutocastGuard, matmul and
// scaled_dot_product_attention on f32 operands compute in bf16 and return
// bf16 (torch.autocast's lower-precision list) — each result equals the bf16 matmul of the
// bf16-rounded operands (computed here independently, in double, then rounded to bf16) — while
// other ops run in the dtype of their inputs and code outside the guard stays f32; gradients of f32
// weights stay f32; guards nest; eager and lazy agree.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/autocast.h"
#include "loom/error.h"
#include "ops/compare.h"
#include "optim/optim_test_util.h"

namespace loom {
namespace {

float round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

// bf16(sum_k bf16(a[i,k]) * bf16(b[k,j])), accumulated in double.
std::vector<float> bf16_matmul(const std::vector<float>& a, const std::vector<float>& b, int m,
                               int k, int n) {
  std::vector<float> out(m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int t = 0; t < k; ++t)
        acc += double(round_bf16(a[i * k + t])) * round_bf16(b[t * n + j]);
      out[i * n + j] = round_bf16(static_cast<float>(acc));
    }
  return out;
}

class Autocast : public ::testing::TestWithParam<std::string> {};

TEST_P(Autocast, MatmulRunsInBf16AndReturnsBf16) {
  Device dev(GetParam());
  manual_seed(21);
  Tensor a = randn({6, 40}), b = randn({40, 5});
  std::vector<float> expected = bf16_matmul(a.to_vector<float>(), b.to_vector<float>(), 6, 40, 5);
  Tensor out;
  {
    AutocastGuard amp;
    EXPECT_TRUE(is_autocast_enabled());
    out = matmul(a.to(dev), b.to(dev));
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_EQ(out.dtype(), DType::bf16);
  testing::sync_if_lazy(dev);
  std::vector<float> got = cast(out.to(Device("cpu")), DType::f32).to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], round_bf16(got[i])) << "element " << i << " is not a bf16 value";
    // Equal, or one bf16 step away where f32 and double accumulation round differently.
    EXPECT_NEAR(got[i], expected[i], std::ldexp(std::fabs(expected[i]), -7) + 1e-6) << i;
  }
  // Without the guard the same matmul is f32: most elements are not bf16 values.
  std::vector<float> f32 = matmul(a, b).to_vector<float>();
  int exact = 0;
  for (float x : f32) exact += x == round_bf16(x);
  EXPECT_LT(exact, 5);
}

TEST_P(Autocast, TransposedBatchedAndGradients) {
  Device dev(GetParam());
  manual_seed(22);
  Tensor a0 = randn({2, 7, 3}), b0 = randn({2, 4, 7});
  Tensor a32 = from_blob(a0.data(), a0.shape(), DType::f32).requires_grad_();
  Tensor b32 = from_blob(b0.data(), b0.shape(), DType::f32).requires_grad_();
  Tensor a = a0.to(dev).requires_grad_(), b = b0.to(dev).requires_grad_();
  Tensor loss;
  {
    AutocastGuard amp;
    Tensor y = matmul(a, b, /*trans_a=*/true, /*trans_b=*/true);  // [2, 3, 4]
    EXPECT_EQ(y.dtype(), DType::bf16);
    EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
    Tensor s = softmax(y, -1);  // other ops run in their input's dtype (CPU autocast)
    EXPECT_EQ(s.dtype(), DType::bf16);
    loss = sum(mul(s, y));
  }
  loss.backward();
  testing::sync_if_lazy(dev);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().dtype(), DType::f32);
  EXPECT_EQ(b.grad().dtype(), DType::f32);
  // Close to the f32 gradients (bf16 has 8 significant bits).
  Tensor y32 = matmul(a32, b32, true, true);
  sum(mul(softmax(y32, -1), y32)).backward();
  EXPECT_TRUE(testing::all_close(a.grad().to(Device("cpu")), a32.grad(), 3e-2, 3e-2));
}

// softmax(q k^T / sqrt(d) + mask) v per batch, in double, from bf16-rounded
// q [B,T,D], k and v [B,S,D]; causal: query i sees keys j <= i (torch's
// is_causal, top-left aligned). Independent of loom's attention kernels.
std::vector<double> host_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const int64_t B = q.shape()[0], T = q.shape()[1], D = q.shape()[2], S = k.shape()[1];
  std::vector<float> qv = q.to_vector<float>(), kv = k.to_vector<float>(),
                     vv = v.to_vector<float>();
  std::vector<double> out(B * T * D, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i) {
      std::vector<double> w(S, 0.0);
      double m = -INFINITY, total = 0;
      for (int64_t j = 0; j < S; ++j) {
        if (causal && j > i) continue;
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += double(round_bf16(qv[(b * T + i) * D + d])) * round_bf16(kv[(b * S + j) * D + d]);
        w[j] = dot / std::sqrt(double(D));
        m = std::max(m, w[j]);
      }
      for (int64_t j = 0; j < S; ++j) {
        w[j] = causal && j > i ? 0.0 : std::exp(w[j] - m);
        total += w[j];
      }
      for (int64_t j = 0; j < S; ++j)
        for (int64_t d = 0; d < D; ++d)
          out[(b * T + i) * D + d] += w[j] / total * round_bf16(vv[(b * S + j) * D + d]);
    }
  return out;
}

TEST_P(Autocast, AttentionRunsInBf16AndReturnsBf16) {
  Device dev(GetParam());
  manual_seed(23);
  Tensor q = randn({2, 6, 8}), k = randn({2, 6, 8}), v = randn({2, 6, 8});
  Tensor out;
  {
    AutocastGuard amp;
    out = scaled_dot_product_attention(q.to(dev), k.to(dev), v.to(dev), Tensor(), true);
  }
  EXPECT_EQ(out.dtype(), DType::bf16);
  testing::sync_if_lazy(dev);
  out = cast(out.to(Device("cpu")), DType::f32);
  std::vector<double> got = out.to_vector<double>();
  // Computed in bf16: every element is a bf16 value...
  for (double x : got) EXPECT_EQ(float(x), round_bf16(float(x)));
  // ...and is causal attention of the bf16-rounded operands (bf16 rounding of the
  // scores, probabilities and output inside the kernel: a few bf16 steps).
  std::vector<double> causal = host_attention(q, k, v, true);
  EXPECT_TRUE(testing::all_close(got, causal, 2e-2, 2e-2, "autocast attention vs host"));
  // The mask matters for these operands, so the check above can tell causal from not.
  EXPECT_FALSE(testing::all_close(got, host_attention(q, k, v, false), 2e-2, 2e-2));
  // The same as loom's own bf16 attention on bf16 operands, cast to f32.
  Tensor bf16 = cast(scaled_dot_product_attention(cast(q, DType::bf16), cast(k, DType::bf16),
                                                  cast(v, DType::bf16), Tensor(), true),
                     DType::f32);
  EXPECT_TRUE(testing::all_close(out.to(Device("cpu")), bf16, 0, 0));
}

INSTANTIATE_TEST_SUITE_P(Devices, Autocast, ::testing::Values("cpu", "lazy"));

TEST(AutocastGuard, NestsAndRestores) {
  Tensor a = randn({3, 3}), b = randn({3, 3});
  {
    AutocastGuard on;
    {
      AutocastGuard off(false);
      EXPECT_FALSE(is_autocast_enabled());
      std::vector<float> v = matmul(a, b).to_vector<float>();
      int exact = 0;
      for (float x : v) exact += x == round_bf16(x);
      EXPECT_LT(exact, 3) << "matmul under a disabling guard ran in bf16";
    }
    EXPECT_TRUE(is_autocast_enabled());
    EXPECT_EQ(autocast_dtype(), DType::bf16);
    // bf16 operands are left alone: bf16 in, bf16 out.
    EXPECT_EQ(matmul(cast(a, DType::bf16), cast(b, DType::bf16)).dtype(), DType::bf16);
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_THROW(AutocastGuard(true, DType::f32), Error);
  EXPECT_FALSE(is_autocast_enabled());
  {
    AutocastGuard half(true, DType::f16);
    EXPECT_EQ(autocast_dtype(), DType::f16);
    EXPECT_EQ(matmul(a, b).dtype(), DType::f16);
  }
}

}  // namespace
}  // namespace loom
