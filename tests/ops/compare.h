// Tolerant tensor comparison for tests: all_close()/expect_close() compare
// element by element with |actual - expected| <= atol + rtol * |expected|,
// an infinity equal only to the same infinity. A NaN on either side is a
// mismatch unless the caller passes Nan::kExpected (the case says NaN is the
// right answer, e.g. log(-1)); then NaN matches NaN and nothing else. Without
// that rule a case whose reference is all NaN would pass whatever the kernel
// computes, as long as it is NaN too.
// A failure explains itself: shapes, dtypes, how many elements differ, the
// max difference and where, then the first values side by side (as llm.c's
// test_gpt2.c and DESIGN.md's "Tests" ask).
//
//   expect_close(cpu_out, ref_out, 1e-6, 1e-6);         // two tensors
//   expect_close(softmax(x), {0.09, 0.24, 0.67}, 1e-6, 0);  // hand-computed values
//   EXPECT_TRUE(all_close(log(neg_x), ref, 1e-6, 0, Nan::kExpected));  // NaN is the answer
//
// Header-only: tests are the only users and CMake compiles only *_test.cpp
// files into loom_tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "loom/tensor.h"

namespace loom::testing {

/// Whether NaN is a valid result of the comparison (see the file comment).
enum class Nan { kNotExpected, kExpected };

/// Element-wise closeness of two value lists (see the file comment).
/// `what` prefixes the failure message (e.g. "shape [2,3] float32").
inline ::testing::AssertionResult all_close(const std::vector<double>& actual,
                                            const std::vector<double>& expected, double rtol,
                                            double atol, const std::string& what = "",
                                            Nan nan = Nan::kNotExpected) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << what << " sizes differ: actual has " << actual.size()
                                         << " elements, expected " << expected.size();
  auto close = [&](double a, double e) {
    if (std::isnan(a) || std::isnan(e))
      return nan == Nan::kExpected && std::isnan(a) && std::isnan(e);
    if (std::isinf(a) || std::isinf(e)) return a == e;
    return std::fabs(a - e) <= atol + rtol * std::fabs(e);
  };
  size_t bad = 0, first_bad = actual.size(), worst = 0;
  double max_diff = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double diff = std::fabs(actual[i] - expected[i]);
    if (!close(actual[i], expected[i])) {
      if (bad++ == 0) first_bad = i;
      if (std::isnan(diff)) diff = INFINITY;
    } else if (std::isnan(diff) || std::isinf(diff)) {
      diff = 0;  // NaN vs NaN or equal infinities
    }
    if (diff > max_diff) max_diff = diff, worst = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream out;
  out.precision(9);
  out << what << (what.empty() ? "" : ": ") << bad << " of " << actual.size()
      << " elements differ (rtol " << rtol << ", atol " << atol
      << (nan == Nan::kExpected ? ", NaN expected" : ", NaN not expected") << "); max |diff| "
      << max_diff << " at index " << worst << " (actual " << actual[worst] << ", expected "
      << expected[worst] << ")\n  index      actual            expected          diff\n";
  auto row = [&](size_t i) {
    out << "  " << i << (close(actual[i], expected[i]) ? "    " : "  * ") << actual[i] << "   "
        << expected[i] << "   " << actual[i] - expected[i] << "\n";
  };
  size_t shown = std::min<size_t>(actual.size(), 8);
  for (size_t i = 0; i < shown; ++i) row(i);
  if (first_bad >= shown) {
    out << "  ...\n";
    for (size_t i = first_bad; i < std::min(actual.size(), first_bad + 4); ++i) row(i);
  }
  return ::testing::AssertionFailure() << out.str();
}

/// Two tensors: same shape and dtype, then values as above.
inline ::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                            double rtol, double atol, Nan nan = Nan::kNotExpected) {
  if (!actual.defined() || !expected.defined())
    return ::testing::AssertionFailure() << "undefined tensor (actual defined: " << actual.defined()
                                         << ", expected defined: " << expected.defined() << ")";
  std::string what = to_string(actual.shape()) + " " + dtype_name(actual.dtype());
  if (actual.shape() != expected.shape() || actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure()
           << "actual is " << what << ", expected " << to_string(expected.shape()) << " "
           << dtype_name(expected.dtype());
  return all_close(actual.to_vector<double>(), expected.to_vector<double>(), rtol, atol, what, nan);
}

/// A tensor against hand-computed values (any dtype; shape checked by count).
inline ::testing::AssertionResult all_close(const Tensor& actual,
                                            const std::vector<double>& expected, double rtol,
                                            double atol, Nan nan = Nan::kNotExpected) {
  if (!actual.defined()) return ::testing::AssertionFailure() << "undefined tensor";
  std::string what = to_string(actual.shape()) + " " + dtype_name(actual.dtype());
  return all_close(actual.to_vector<double>(), expected, rtol, atol, what, nan);
}

/// Non-fatal gtest check of all_close(actual, expected, rtol, atol).
template <typename Expected>
void expect_close(const Tensor& actual, const Expected& expected, double rtol, double atol) {
  EXPECT_TRUE(all_close(actual, expected, rtol, atol));
}
inline void expect_close(const Tensor& actual, std::initializer_list<double> expected, double rtol,
                         double atol) {
  EXPECT_TRUE(all_close(actual, std::vector<double>(expected), rtol, atol));
}

}  // namespace loom::testing
