// First end-to-end checks of the eager engine: a value and a gradient that
// are computed independently here.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/error.h"
#include "loom/ops.h"

namespace loom {
namespace {

TEST(Smoke, MatmulValue) {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor({1, 0, 0, 1, 1, 1}, {3, 2});
  std::vector<float> c = matmul(a, b).to_vector<float>();
  EXPECT_EQ(c, (std::vector<float>{4, 5, 10, 11}));
}

TEST(Smoke, ExpSumGradient) {
  Tensor x = tensor({0.5f, -1.0f, 2.0f}, {3}).requires_grad_();
  Tensor y = sum(exp(x) * x);  // d/dx = exp(x)(1+x)
  y.backward();
  std::vector<float> g = x.grad().to_vector<float>();
  std::vector<float> v = {0.5f, -1.0f, 2.0f};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g[i], std::exp(v[i]) * (1 + v[i]), 1e-5);
}

TEST(Smoke, ShapeMismatchNamesOp) {
  try {
    matmul(zeros({2, 3}), zeros({4, 5}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[matmul] shapes [2,3] and [4,5] do not match");
  }
}

}  // namespace
}  // namespace loom
