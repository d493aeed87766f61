// Level-1 gradient checks (DESIGN.md "Tests"): for every differentiable op
// (no kNondiff in ops.def), every table case marked `grad` is run in f32 on
// Device("cpu:reference"); backward() of L = sum(out * R), with a fixed
// random R, must match central finite differences
//   dL/dx_i ~ (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)
// for every element of every floating operand. L is summed in double on
// the host to keep f32 rounding out of the difference quotient; the
// tolerance is 1e-2 relative plus 1e-3 times the gradient's scale, loose
// enough for f32 noise (~1e-5 here) and tight enough that a wrong rule
// (typically off by O(1)) fails. The table keeps these operands smooth:
// clear of the kinks of relu/abs/max, positive for log/sqrt/pow.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "loom/error.h"
#include "ops/compare.h"
#include "ops/op_cases.h"

namespace loom::optest {
namespace {

const Device kRef("cpu:reference");

// Fixed random projection R with out's shape (f32, in [-1, 1)).
Tensor projection(const Tensor& out, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  std::vector<float> r(out.numel());
  for (float& v : r) v = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0);
  return tensor(r, out.shape(), kRef);
}

double project(const Tensor& out, const Tensor& r) {
  std::vector<double> o = out.to_vector<double>(), rv = r.to_vector<double>();
  double l = 0;
  for (size_t i = 0; i < o.size(); ++i) l += o[i] * rv[i];
  return l;
}

// The gradient check of one case; returns the number of elements checked.
int64_t check_case(const OpCase& c) {
  CaseEnv env(kRef, DType::f32, case_seed(c));
  Inputs in = c.make(env);
  std::vector<size_t> diff;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].defined() || !is_floating(in[i].dtype())) continue;
    in[i] = in[i].detach();
    in[i].requires_grad_(true);
    diff.push_back(i);
  }
  if (diff.empty()) {
    ADD_FAILURE() << "case has no floating operand to check";
    return 0;
  }
  Tensor out = c.run(in, env);
  Tensor r = projection(out, case_seed(c));
  Tensor loss = sum(mul(out, r));
  if (!loss.requires_grad()) {
    // No gradient can flow (e.g. a cast to an integer dtype): all zeros.
  } else {
    loss.backward();
  }

  NoGradGuard no_grad;
  int64_t checked = 0;
  for (size_t i : diff) {
    std::vector<float> base = in[i].to_vector<float>();
    std::vector<double> numeric(base.size());
    for (size_t e = 0; e < base.size(); ++e) {
      Inputs probe = in;
      std::vector<float> moved = base;
      moved[e] = static_cast<float>(base[e] + c.grad_eps);
      probe[i] = tensor(moved, in[i].shape(), kRef);
      double plus = project(c.run(probe, env), r);
      moved[e] = static_cast<float>(base[e] - c.grad_eps);
      probe[i] = tensor(moved, in[i].shape(), kRef);
      double minus = project(c.run(probe, env), r);
      numeric[e] = (plus - minus) / (2.0 * c.grad_eps);
    }
    Tensor g = in[i].grad();
    std::vector<double> analytic =
        g.defined() ? g.to_vector<double>() : std::vector<double>(base.size(), 0.0);
    if (g.defined()) {
      EXPECT_EQ(g.shape(), in[i].shape()) << "gradient of operand " << i << " has the wrong shape";
      EXPECT_EQ(g.dtype(), in[i].dtype()) << "gradient of operand " << i << " has the wrong dtype";
    }
    double scale = 1.0;
    for (double v : numeric) scale = std::max(scale, std::fabs(v));
    EXPECT_TRUE(testing::all_close(analytic, numeric, 1e-2, 1e-3 * scale,
                                   "d(sum(out*R))/d(operand " + std::to_string(i) + ")"));
    checked += static_cast<int64_t>(base.size());
  }
  return checked;
}

class GradCheck : public ::testing::TestWithParam<ops::OpKind> {};

TEST_P(GradCheck, MatchesFiniteDifferences) {
  int64_t checked = 0;
  for (const OpCase* c : cases_for(GetParam())) {
    if (!c->grad || c->dtypes.empty() ||
        std::find(c->dtypes.begin(), c->dtypes.end(), DType::f32) == c->dtypes.end())
      continue;
    SCOPED_TRACE(case_label(*c));
    try {
      checked += check_case(*c);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
  }
  EXPECT_GT(checked, 0) << ops::op_name(GetParam()) << " has no case marked for a gradient check";
}

std::vector<ops::OpKind> differentiable_ops() {
  std::vector<ops::OpKind> out;
  for (int i = 0; i < ops::kNumOps; ++i) {
    auto op = static_cast<ops::OpKind>(i);
    if (!ops::has_trait(op, ops::kNondiff)) out.push_back(op);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grad, GradCheck, ::testing::ValuesIn(differentiable_ops()),
                         [](const ::testing::TestParamInfo<ops::OpKind>& info) {
                           return std::string(ops::op_name(info.param));
                         });

}  // namespace
}  // namespace loom::optest
