// The cpu backend's vectorized math (backends/cpu/vec_math.h) against <cmath>
// in double: erfc (GELU's) over its whole float range (both tails, 0, NaN and
// infinities) within the documented 4 ulp, exp within 1 ulp, and the same
// bits for an element whatever its position in the array (the vector body
// and the zero-padded tail compute it alike).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/vec_math.h"

namespace loom::backends::cpu {
namespace {

// Distance from `want` in units of the float ulp at want's binade (2^-149
// for subnormals); NaN when got is NaN, so a NaN result counts as worst.
double ulps(float got, double want) {
  double ulp = std::ldexp(1.0, std::max(std::ilogb(want) - 23, -149));
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

std::vector<float> sweep(float lo, float hi, int n) {
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = lo + (hi - lo) * static_cast<float>(i) / (n - 1);
  return x;
}

TEST(VecMath, ErfcIsWithinFourUlpWhereTheResultIsNormal) {
  // erfc(z) is normal (> 1.18e-38) for z < ~9.19; beyond that the tail underflows.
  std::vector<float> x = sweep(-10.0f, 9.1f, 200003);
  std::vector<float> y(x.size());
  vm::erfc(x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  float at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double u = ulps(y[i], std::erfc(static_cast<double>(x[i])));
    if (!(u <= worst)) worst = u, at = x[i];  // a NaN result is the worst
  }
  EXPECT_LE(worst, 4.0) << "worst at erfc(" << at << ")";  // libmvec: 1.57 measured
}

TEST(VecMath, ErfcEdgeValues) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f, -0.0f, inf, -inf, std::nanf(""), 30.0f, -30.0f, 1e-30f, 10.5f};
  std::vector<float> y(x.size());
  vm::erfc(x.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 2.0f);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_EQ(y[6], 2.0f);
  EXPECT_EQ(y[7], 1.0f);
  // The true 7.0e-50 is far below the smallest subnormal: 0 (or one step above).
  EXPECT_GE(y[8], 0.0f);
  EXPECT_LE(y[8], std::numeric_limits<float>::denorm_min());
}

TEST(VecMath, ExpIsWithinOneUlp) {
  std::vector<float> x = sweep(-87.0f, 88.5f, 100003);
  std::vector<float> y(x.size());
  vm::exp(x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double u = ulps(y[i], std::exp(static_cast<double>(x[i])));
    if (!(u <= worst)) worst = u;  // a NaN result is the worst
  }
  EXPECT_LE(worst, 1.0);
}

TEST(VecMath, AnElementsBitsDoNotDependOnItsPosition) {
  std::vector<float> x = sweep(-6.0f, 6.0f, 37);  // 37: four 8-lane blocks and a tail of 5
  std::vector<float> whole(x.size()), one(1);
  for (auto f : {vm::exp, vm::erfc}) {
    f(x.data(), whole.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      f(&x[i], one.data(), 1);
      EXPECT_EQ(whole[i], one[0]) << "x = " << x[i];
    }
  }
}

TEST(VecMath, ExpShiftSumMatchesExpThenSum) {
  std::vector<float> x = sweep(-5.0f, 3.0f, 45);
  std::vector<float> y(x.size()), e(x.size());
  double s = vm::exp_shift_sum(x.data(), y.data(), static_cast<int64_t>(x.size()), 1.5f);
  std::vector<float> shifted(x.size());
  for (size_t i = 0; i < x.size(); ++i) shifted[i] = x[i] - 1.5f;
  vm::exp(shifted.data(), e.data(), static_cast<int64_t>(x.size()));
  double want = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], e[i]);
    want += e[i];
  }
  EXPECT_NEAR(s, want, 1e-12 * want);
}

}  // namespace
}  // namespace loom::backends::cpu
