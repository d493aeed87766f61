// Level-1 forward tests (DESIGN.md "Tests"): every case of the op table, in
// every dtype of its sweep, runs on Device("cpu") and on
// Device("cpu:reference"); the cpu result must match the reference oracle.
// Tolerances by result dtype (issue 2, "Done when"): f32 1e-6 relative,
// bf16 1e-2, f16 2e-3, integers and bools exact. The absolute floor is the
// same number for element-wise results and grows with the reduction length
// and the result's magnitude for sums (matmul, reductions, softmax): a sum
// of n terms in f32 legitimately differs by ~sqrt(n) roundings.
//
//   ./loom_tests --gtest_filter='OpForward*matmul*'
#include <gtest/gtest.h>

#include <cmath>

#include "loom/error.h"
#include "ops/compare.h"
#include "ops/op_cases.h"

namespace loom::optest {
namespace {

struct Tolerance {
  double rtol = 0, atol = 0;
};

double base_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 1e-6;
    case DType::bf16:
      return 1e-2;
    case DType::f16:
      return 2e-3;
    default:
      return 0.0;  // integers and bools: exact
  }
}

Tolerance tolerance_for(const Tensor& expected, int64_t reduce_len) {
  double base = base_tolerance(expected.dtype());
  if (base == 0.0) return {};
  double scale = 1.0;
  if (reduce_len > 1) {
    double max_abs = 0.0;
    for (double v : expected.to_vector<double>())
      if (std::isfinite(v)) max_abs = std::max(max_abs, std::fabs(v));
    scale = std::max(1.0, max_abs) * std::sqrt(static_cast<double>(reduce_len));
  }
  return {base, base * scale};
}

testing::Nan nan_policy(const OpCase& c) {
  return c.nan_expected ? testing::Nan::kExpected : testing::Nan::kNotExpected;
}

class OpForward : public ::testing::TestWithParam<ops::OpKind> {};

TEST_P(OpForward, CpuMatchesReference) {
  std::vector<const OpCase*> cases = cases_for(GetParam());
  ASSERT_FALSE(cases.empty()) << "no test case for " << ops::op_name(GetParam());
  for (const OpCase* c : cases) {
    for (DType dtype : c->dtypes) {
      SCOPED_TRACE(case_label(*c) + " in " + dtype_name(dtype));
      CaseEnv ref_env(Device("cpu:reference"), dtype, case_seed(*c));
      CaseEnv cpu_env(Device("cpu"), dtype, case_seed(*c));
      Tensor expected, actual;
      try {
        expected = c->run(c->make(ref_env), ref_env);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "reference threw: " << e.what();
        continue;
      }
      try {
        actual = c->run(c->make(cpu_env), cpu_env);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "cpu threw: " << e.what();
        continue;
      }
      EXPECT_EQ(expected.device(), Device("cpu:reference"));
      EXPECT_EQ(actual.device(), Device("cpu"));
      Tolerance tol = tolerance_for(expected, c->reduce_len);
      EXPECT_TRUE(testing::all_close(actual, expected, tol.rtol, tol.atol, nan_policy(*c)));
    }
  }
}

std::vector<ops::OpKind> all_ops() {
  std::vector<ops::OpKind> out;
  for (int i = 0; i < ops::kNumOps; ++i) out.push_back(static_cast<ops::OpKind>(i));
  return out;
}

INSTANTIATE_TEST_SUITE_P(Op, OpForward, ::testing::ValuesIn(all_ops()),
                         [](const ::testing::TestParamInfo<ops::OpKind>& info) {
                           return std::string(ops::op_name(info.param));
                         });

// The comparison itself must be able to fail: a one-ulp f32 change passes,
// a 1e-5 relative change does not, and bf16 tolerates what f32 does not.
TEST(OpForwardTolerance, DetectsSmallErrors) {
  Tensor expected = tensor({1.0f, -2.0f, 3.0f}, {3});
  Tensor one_ulp = tensor({std::nextafter(1.0f, 2.0f), -2.0f, 3.0f}, {3});
  Tensor off = tensor({1.0f, -2.0f, 3.00003f}, {3});
  Tolerance f32 = tolerance_for(expected, 1);
  EXPECT_TRUE(testing::all_close(one_ulp, expected, f32.rtol, f32.atol));
  EXPECT_FALSE(testing::all_close(off, expected, f32.rtol, f32.atol));
  Tolerance bf16 = tolerance_for(expected.to(DType::bf16), 1);
  EXPECT_TRUE(
      testing::all_close(off.to(DType::bf16), expected.to(DType::bf16), bf16.rtol, bf16.atol));
  Tensor ints = tensor_i64({1, 2, 3}, {3});
  Tolerance exact = tolerance_for(ints, 1);
  EXPECT_FALSE(testing::all_close(tensor_i64({1, 2, 4}, {3}), ints, exact.rtol, exact.atol));
  EXPECT_FALSE(testing::all_close(tensor({NAN}, {1}), tensor({1.0f}, {1}), 1, 1));
  // NaN matches NaN only where the case says NaN is expected.
  EXPECT_FALSE(
      testing::all_close(tensor({NAN, INFINITY}, {2}), tensor({NAN, INFINITY}, {2}), 0, 0));
  EXPECT_TRUE(testing::all_close(tensor({NAN, INFINITY}, {2}), tensor({NAN, INFINITY}, {2}), 0, 0,
                                 testing::Nan::kExpected));
  EXPECT_FALSE(
      testing::all_close(tensor({NAN}, {1}), tensor({1.0f}, {1}), 1, 1, testing::Nan::kExpected));
  EXPECT_FALSE(
      testing::all_close(tensor({1.0f}, {1}), tensor({NAN}, {1}), 1, 1, testing::Nan::kExpected));
  EXPECT_FALSE(testing::all_close(tensor({1.0f}, {1}), tensor({1.0f}, {1, 1}), 1, 1));
}

}  // namespace
}  // namespace loom::optest
