// Result dtypes and conversions against PyTorch's rules (torch.result_type,
// documented under "Type promotion" in the torch docs): category order
// bool < integer < floating; within a category a dimensioned tensor wins
// over a rank-0 tensor, which wins over a C++ number; a rank-0 tensor or a
// number of a higher category does promote. Casts: floats to integers
// truncate toward zero; to bf16/f16 round to nearest even, overflowing to inf.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/error.h"
#include "loom/ops.h"
#include "ops/compare.h"

namespace loom {
namespace {

using testing::all_close;

Tensor t(DType dtype, const Shape& shape = {2}) { return ones(shape, dtype); }

TEST(OpPromotion, TensorsOfOneRankClass) {
  EXPECT_EQ(add(t(DType::i32), t(DType::f32)).dtype(), DType::f32);
  EXPECT_EQ(add(t(DType::i32), t(DType::i64)).dtype(), DType::i64);
  EXPECT_EQ(add(t(DType::bf16), t(DType::f16)).dtype(), DType::f32);
  EXPECT_EQ(add(t(DType::bf16), t(DType::f32)).dtype(), DType::f32);
  EXPECT_EQ(add(t(DType::boolean), t(DType::boolean)).dtype(), DType::boolean);
  EXPECT_EQ(mul(t(DType::boolean), t(DType::i32)).dtype(), DType::i32);
  EXPECT_EQ(div(t(DType::i32), t(DType::i32)).dtype(), DType::f32);  // true division
  EXPECT_EQ(pow(t(DType::i64), t(DType::i64)).dtype(), DType::i64);  // torch.pow keeps ints
  EXPECT_EQ(eq(t(DType::f32), t(DType::i64)).dtype(), DType::boolean);
  EXPECT_EQ(where(t(DType::boolean), t(DType::i32), t(DType::bf16)).dtype(), DType::bf16);
  EXPECT_EQ(exp(t(DType::i32)).dtype(), DType::f32);
  EXPECT_EQ(abs(t(DType::i32)).dtype(), DType::i32);
}

TEST(OpPromotion, RankZeroTensorsAndNumbers) {
  Tensor half = t(DType::bf16, {3});
  // Same category: the dimensioned operand's dtype wins.
  EXPECT_EQ(mul(half, t(DType::f32, {})).dtype(), DType::bf16);
  EXPECT_EQ(mul(t(DType::f32, {}), half).dtype(), DType::bf16);
  EXPECT_EQ(add(t(DType::i32, {3}), t(DType::i64, {})).dtype(), DType::i32);
  EXPECT_EQ(mul(half, 0.5).dtype(), DType::bf16);
  EXPECT_EQ(where(t(DType::boolean, {3}), half, t(DType::f32, {})).dtype(), DType::bf16);
  // A higher category promotes even from rank 0.
  EXPECT_EQ(add(t(DType::i32, {3}), t(DType::f32, {})).dtype(), DType::f32);
  EXPECT_EQ(add(t(DType::boolean, {3}), t(DType::i64, {})).dtype(), DType::i64);
  EXPECT_EQ(add(t(DType::i64, {3}), 2.5).dtype(), DType::f32);
  EXPECT_EQ(add(t(DType::i64, {3}), 2.0).dtype(), DType::i64);
  // Two rank-0 operands: ordinary promotion.
  EXPECT_EQ(add(t(DType::bf16, {}), t(DType::f16, {})).dtype(), DType::f32);
  // The values survive: bf16 * 0.5-as-f32-scalar.
  EXPECT_TRUE(all_close(mul(half, t(DType::f32, {}) * 0.5), {0.5, 0.5, 0.5}, 0, 0));
}

TEST(OpPromotion, IntegerResults) {
  EXPECT_TRUE(
      all_close(pow(tensor_i64({2, -3, 5}, {3}), tensor_i64({3, 2, 0}, {3})), {8, 9, 1}, 0, 0));
  EXPECT_THROW(pow(tensor_i64({2}, {1}), tensor_i64({-1}, {1})), Error);
  EXPECT_TRUE(all_close(div(tensor_i64({7, -7}, {2}), tensor_i64({2, 2}, {2})), {3.5, -3.5}, 0, 0));
  EXPECT_TRUE(all_close(sum(tensor_i64({1, 2, 3}, {3}).to(DType::i32)), {6}, 0, 0));
}

TEST(OpPromotion, CastsTruncateAndRound) {
  Tensor x = tensor({-2.7f, -0.5f, 0.5f, 2.7f}, {4});
  EXPECT_TRUE(all_close(cast(x, DType::i32), {-2, 0, 0, 2}, 0, 0));
  EXPECT_TRUE(all_close(cast(x, DType::i64), {-2, 0, 0, 2}, 0, 0));
  EXPECT_TRUE(all_close(cast(tensor({0, 0.1f, -3}, {3}), DType::boolean), {0, 1, 1}, 0, 0));
  // bf16 has 8 significant bits: 1 + 2^-8 is a tie -> 1 (even); 1 + 3*2^-8
  // is a tie between 1 + 2^-7 (odd) and 1 + 2^-6 (even) -> 1 + 2^-6.
  EXPECT_TRUE(
      all_close(cast(tensor({1.00390625f, 1.01171875f}, {2}), DType::bf16), {1.0, 1.015625}, 0, 0));
  // f16: 65519 -> 65504 (max), 65520 -> inf (tie rounds to the even inf).
  Tensor h = cast(tensor({65519.0f, 65520.0f, -1e6f, 1e-8f}, {4}), DType::f16);
  EXPECT_TRUE(all_close(h, {65504, INFINITY, -INFINITY, 0}, 0, 0));
  EXPECT_TRUE(std::isnan(cast(tensor({NAN}, {1}), DType::bf16).item()));
  EXPECT_TRUE(all_close(cast(tensor_i64({3, 0}, {2}), DType::boolean), {1, 0}, 0, 0));
}

}  // namespace
}  // namespace loom
