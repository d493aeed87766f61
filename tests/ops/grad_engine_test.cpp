// Autograd engine behaviour through the public API (issue 2 item 5):
// accumulation into .grad across backward calls, zero_grad, NoGradGuard,
// detach, backward with an explicit gradient, the error for an operand
// modified in place after use, and sum_to (the reverse of broadcasting).
// Expected values are computed by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "loom/error.h"
#include "loom/ops.h"
#include "ops/compare.h"

namespace loom {
namespace {

using testing::all_close;

const Device kRef("cpu:reference");

TEST(GradEngine, AccumulatesAcrossTwoBackwardCalls) {
  Tensor x = tensor({1, 2, 3}, {3}, kRef).requires_grad_();
  sum(x * x).backward();  // 2x
  EXPECT_TRUE(all_close(x.grad(), {2, 4, 6}, 0, 0));
  sum(x * 3.0).backward();  // + 3
  EXPECT_TRUE(all_close(x.grad(), {5, 7, 9}, 0, 0));
}

TEST(GradEngine, ZeroGradStartsOver) {
  Tensor x = tensor({1, -2}, {2}, kRef).requires_grad_();
  sum(x * x).backward();
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  sum(x * 5.0).backward();
  EXPECT_TRUE(all_close(x.grad(), {5, 5}, 0, 0));
}

TEST(GradEngine, SharedOperandSumsBothPaths) {
  // y = x*x + exp(x): dy/dx = 2x + exp(x).
  Tensor x = tensor({0.5f, -1.0f}, {2}, kRef).requires_grad_();
  sum(x * x + exp(x)).backward();
  EXPECT_TRUE(all_close(x.grad(), {1.0 + std::exp(0.5), -2.0 + std::exp(-1.0)}, 1e-6, 1e-7));
}

TEST(GradEngine, NoGradGuardRecordsNothing) {
  Tensor x = tensor({1, 2}, {2}, kRef).requires_grad_();
  {
    NoGradGuard guard;
    EXPECT_FALSE(is_grad_enabled());
    {
      NoGradGuard nested;
      EXPECT_FALSE(is_grad_enabled());
    }
    EXPECT_FALSE(is_grad_enabled());
    Tensor y = exp(x);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_THROW(sum(y).backward(), Error);
  }
  EXPECT_TRUE(is_grad_enabled());
  EXPECT_TRUE(exp(x).requires_grad());
}

TEST(GradEngine, DetachCutsTheGraph) {
  Tensor x = tensor({1, 2, 3}, {3}, kRef).requires_grad_();
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(all_close(d, y, 0, 0));
  sum(d * x).backward();  // d/dx sum(stop(2x) * x) = 2x, not 4x
  EXPECT_TRUE(all_close(x.grad(), {2, 4, 6}, 0, 0));
}

TEST(GradEngine, ExplicitGradient) {
  Tensor x = tensor({1, 2, 3, 4}, {2, 2}, kRef).requires_grad_();
  Tensor y = x * 3.0;
  y.backward(tensor({1, 2, 3, 4}, {2, 2}, kRef));  // dL/dx = 3 g
  EXPECT_TRUE(all_close(x.grad(), {3, 6, 9, 12}, 0, 0));
  EXPECT_THROW(y.backward(), Error);                           // not a scalar
  EXPECT_THROW(y.backward(tensor({1, 2}, {2}, kRef)), Error);  // wrong shape
}

TEST(GradEngine, BackwardOfALeaf) {
  Tensor x = tensor({4}, {}, kRef).requires_grad_();
  x.backward();
  EXPECT_TRUE(all_close(x.grad(), {1}, 0, 0));
}

TEST(GradEngine, OperandModifiedInPlaceAfterUseThrows) {
  Tensor x = tensor({1, 2}, {2}, kRef).requires_grad_();
  Tensor w = tensor({3, 4}, {2}, kRef);
  Tensor y = sum(x * w);
  w.mul_(2.0);
  try {
    y.backward();
    FAIL() << "backward used a stale operand";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[backward] operand 1 of mul was modified in place"),
              std::string::npos)
        << e.what();
  }
}

TEST(GradEngine, InPlaceOnALeafNeedsNoGrad) {
  Tensor x = tensor({1, 2}, {2}, kRef).requires_grad_();
  EXPECT_THROW(x.add_(ones({2}, DType::f32, kRef)), Error);
  {
    NoGradGuard guard;  // an optimizer step
    x.add_(ones({2}, DType::f32, kRef), -0.5);
  }
  EXPECT_TRUE(all_close(x, {0.5, 1.5}, 0, 0));
  EXPECT_TRUE(x.requires_grad());
}

TEST(GradEngine, SumToReversesBroadcasting) {
  Tensor g = arange(0, 24, 1, DType::f32, kRef);
  g = reshape(g, {2, 3, 4});
  // [3,1]: sum over axis 0 and 2. Row j: sum_{i,k} (12 i + 4 j + k) = 2*(4*4j+6) + 12*4 = 32j + 60.
  Tensor a = autograd::sum_to(g, {3, 1});
  EXPECT_EQ(a.shape(), (Shape{3, 1}));
  EXPECT_TRUE(all_close(a, {60, 92, 124}, 0, 0));
  // [4]: sum over the leading axes. Col k: sum_{i,j} (12 i + 4 j + k) = 6k + 12*3 + 4*3*2 = 6k
  // + 60.
  EXPECT_TRUE(all_close(autograd::sum_to(g, {4}), {60, 66, 72, 78}, 0, 0));
  EXPECT_TRUE(all_close(autograd::sum_to(g, {1, 1, 4}), {60, 66, 72, 78}, 0, 0));
  Tensor all = autograd::sum_to(g, {});
  EXPECT_EQ(all.shape(), Shape{});
  EXPECT_TRUE(all_close(all, {276}, 0, 0));
  EXPECT_TRUE(autograd::sum_to(g, {2, 3, 4}).is_same(g));
}

TEST(GradEngine, BroadcastOperandsGetSummedGradients) {
  Tensor x = tensor({1, 2, 3}, {3, 1}, kRef).requires_grad_();
  Tensor y = tensor({1, 2, 3, 4}, {4}, kRef).requires_grad_();
  sum(x * y).backward();  // [3,4]: dx_i = sum_j y_j = 10, dy_j = sum_i x_i = 6
  EXPECT_EQ(x.grad().shape(), (Shape{3, 1}));
  EXPECT_TRUE(all_close(x.grad(), {10, 10, 10}, 0, 0));
  EXPECT_EQ(y.grad().shape(), (Shape{4}));
  EXPECT_TRUE(all_close(y.grad(), {6, 6, 6, 6}, 0, 0));
}

TEST(GradEngine, GradientKeepsTheOperandDtype) {
  Tensor x = tensor({1, 2}, {2}, kRef).to(DType::bf16).detach().requires_grad_();
  sum(x * x).backward();
  EXPECT_EQ(x.grad().dtype(), DType::bf16);
  EXPECT_TRUE(all_close(x.grad(), {2, 4}, 0, 0));
}

TEST(GradEngine, CastToIntegerPassesNoGradient) {
  // torch: an integer result does not require grad, so nothing flows back
  // through a cast to an integer dtype. x reaches the loss along a float path
  // (3x) and through an integer round trip (5 * float(int(x))): only the float
  // path's gradient may arrive, so x.grad is exactly 3 (8 if the integer cast
  // passed the gradient through).
  Tensor x = tensor({0.5f, 1.5f}, {2}, kRef).requires_grad_();
  Tensor loss = sum(x * 3.0) + sum(cast(cast(x, DType::i64), DType::f32) * 5.0);
  loss.backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(all_close(x.grad(), {3, 3}, 0, 0));

  // Only the integer path: no gradient at all (loom may also refuse the
  // backward with a loom::Error, as torch refuses a result without grad).
  Tensor y = tensor({0.5f, 1.5f}, {2}, kRef).requires_grad_();
  Tensor n = sum(cast(y, DType::i64));
  try {
    n.backward();
  } catch (const Error&) {
  }
  if (y.grad().defined()) {
    EXPECT_TRUE(all_close(y.grad(), {0, 0}, 0, 0)) << "a gradient flowed through cast to i64";
  }
}

TEST(GradEngine, BackwardFreesTheGraphAndASecondBackwardIsAnError) {
  Tensor x = tensor({1, 2, 3}, {3}, kRef).requires_grad_();
  Tensor h = exp(x);
  Tensor y = sum(h * h);
  y.backward();
  std::vector<float> g = x.grad().to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], 2 * std::exp(2.0 * (i + 1)), 1e-3 * g[i]);
  try {
    y.backward();
    FAIL() << "a second backward through a freed graph did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[backward] trying to backward through the graph a "
                                         "second time"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom
