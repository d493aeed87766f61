// Level-2 (DESIGN.md "Tests"): every case of the op table, in every dtype of
// its sweep, runs on the eager `cpu` device and traced on the `lazy` device
// (one graph per case, compiled and run by mark_step); the two must agree.
// Both devices run the same cpu kernels, so most results are bitwise equal;
// a one-op graph may still differ in the last bits where the lazy compiler
// fuses the ops a public function expands to (softmax, gelu, layer_norm...),
// so values are compared with the forward test's f32 tolerance and counted:
// at least three quarters of the cases must match bit for bit. The same
// cases run on every other registered backend against lazy:cpu
// (BackendForward: lazy:sim bit for bit; tolerances in tests/common/backends.h).
//
//   ./loom_tests --gtest_filter='Op/LazyForward*:Op/BackendForward*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/backends.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "ops/compare.h"
#include "ops/op_cases.h"

namespace loom::optest {
namespace {

// Bitwise equal values; NaN equals NaN only when the case expects NaN (ops/compare.h).
bool bitwise_equal(const Tensor& a, const Tensor& b, bool nan_expected) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (!nan_expected || !(std::isnan(x[i]) && std::isnan(y[i]))) return false;
      continue;
    }
    if (std::memcmp(&x[i], &y[i], sizeof(double)) != 0) return false;
  }
  return true;
}

class LazyForward : public ::testing::TestWithParam<ops::OpKind> {};

TEST_P(LazyForward, LazyMatchesEager) {
  std::vector<const OpCase*> cases = cases_for(GetParam());
  ASSERT_FALSE(cases.empty()) << "no test case for " << ops::op_name(GetParam());
  int runs = 0, bitwise = 0;
  for (const OpCase* c : cases) {
    for (DType dtype : c->dtypes) {
      SCOPED_TRACE(case_label(*c) + " in " + dtype_name(dtype));
      CaseEnv cpu_env(Device("cpu"), dtype, case_seed(*c));
      CaseEnv lazy_env(Device("lazy"), dtype, case_seed(*c));
      Tensor expected, actual;
      try {
        manual_seed(7);
        expected = c->run(c->make(cpu_env), cpu_env);
      } catch (const loom::Error&) {
        continue;  // a misuse case: the misuse test checks the message
      }
      try {
        manual_seed(7);
        actual = c->run(c->make(lazy_env), lazy_env);
        EXPECT_EQ(actual.device(), Device("lazy"));
        lazy::mark_step();
        actual = actual.to(Device("cpu"));
      } catch (const std::exception& e) {
        ADD_FAILURE() << "lazy threw where eager did not: " << e.what();
        continue;
      }
      ++runs;
      if (bitwise_equal(actual, expected, c->nan_expected)) {
        ++bitwise;
        continue;
      }
      double tol = dtype == DType::f32 ? 1e-6 : dtype == DType::bf16 ? 1e-2 : 2e-3;
      if (!is_floating(dtype)) tol = 0;
      EXPECT_TRUE(testing::all_close(
          actual, expected, tol, tol * c->reduce_len,
          c->nan_expected ? testing::Nan::kExpected : testing::Nan::kNotExpected));
    }
  }
  EXPECT_GE(4 * bitwise, 3 * runs)
      << bitwise << " of " << runs << " cases bitwise equal between eager and lazy";
}

// Every other registered backend (testing::cross_device_backends(): lazy:sim,
// and whatever joins the registry) runs the same programs against lazy:cpu.
// A backend with the same kernels (sim: its own memory and stream, the cpu
// kernels) must equal lazy:cpu bit for bit, errors included (a kernel's
// loom::Error crosses the sim's stream thread); any other within its
// tolerance (testing::kBackendTraits), throwing where lazy:cpu throws.
struct BackendOp {
  std::string backend;
  ops::OpKind op;
};

class BackendForward : public ::testing::TestWithParam<BackendOp> {};

TEST_P(BackendForward, MatchesLazyCpu) {
  const std::string device = testing::lazy_device_of(GetParam().backend);
  LOOM_SKIP_IF_UNAVAILABLE(device);
  const testing::BackendTraits traits = testing::backend_traits(GetParam().backend);
  int runs = 0;
  for (const OpCase* c : cases_for(GetParam().op)) {
    for (DType dtype : c->dtypes) {
      SCOPED_TRACE(case_label(*c) + " in " + dtype_name(dtype) + " on " + device);
      auto run_on = [&](const Device& dev, std::string* error) {
        CaseEnv env(dev, dtype, case_seed(*c));
        try {
          manual_seed(7);
          Tensor t = c->run(c->make(env), env);
          lazy::mark_step();
          return t.to(Device("cpu"));
        } catch (const loom::Error& e) {
          *error = e.what();
          return Tensor();
        }
      };
      std::string cpu_error, error;
      Tensor expected = run_on(Device("lazy"), &cpu_error);
      Tensor actual = run_on(Device(device), &error);
      if (traits.bitwise_with_cpu)
        EXPECT_EQ(error, cpu_error);
      else
        EXPECT_EQ(error.empty(), cpu_error.empty()) << "lazy:cpu: " << cpu_error << "; " << error;
      if (!expected.defined() || !actual.defined()) continue;
      ++runs;
      if (traits.bitwise_with_cpu) {
        // Same kernels on both devices: NaN where lazy:cpu has NaN is the same number.
        EXPECT_TRUE(bitwise_equal(actual, expected, /*nan_expected=*/true));
        continue;
      }
      // By the result's dtype: an integer case can give floats (cos of int32).
      const DType out = expected.dtype();
      double tol = out == DType::f32    ? traits.f32_tol
                   : out == DType::bf16 ? traits.bf16_tol
                                        : traits.f16_tol;
      if (!is_floating(out)) tol = 0;
      EXPECT_TRUE(testing::all_close(
          actual, expected, tol, tol * c->reduce_len,
          c->nan_expected ? testing::Nan::kExpected : testing::Nan::kNotExpected));
    }
  }
  EXPECT_GT(runs, 0);
}

std::vector<ops::OpKind> every_op() {
  std::vector<ops::OpKind> out;
  for (int i = 0; i < ops::kNumOps; ++i) out.push_back(static_cast<ops::OpKind>(i));
  return out;
}

INSTANTIATE_TEST_SUITE_P(Op, LazyForward, ::testing::ValuesIn(every_op()),
                         [](const ::testing::TestParamInfo<ops::OpKind>& info) {
                           return std::string(ops::op_name(info.param));
                         });

// Every op on every registered backend but the baseline cpu.
std::vector<BackendOp> every_backend_op() {
  std::vector<BackendOp> out;
  for (const std::string& b : testing::cross_device_backends())
    if (b != "cpu")
      for (ops::OpKind op : every_op()) out.push_back({b, op});
  return out;
}

void PrintTo(const BackendOp& p, std::ostream* os) {
  *os << ops::op_name(p.op) << " on lazy:" << p.backend;
}

INSTANTIATE_TEST_SUITE_P(Op, BackendForward, ::testing::ValuesIn(every_backend_op()),
                         [](const ::testing::TestParamInfo<BackendOp>& info) {
                           return info.param.backend + "_" +
                                  std::string(ops::op_name(info.param.op));
                         });

}  // namespace
}  // namespace loom::optest
