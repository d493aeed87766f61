// Helpers for the cpu-kernel tests: build operands of any dtype with seeded
// random values, run one op on the reference and the cpu backend, and compare
// the outputs element by element (first mismatches side by side, max diff).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel_backend.h"
#include "backends/reference/reference.h"
#include "core/buffer.h"
#include "ops/infer.h"

namespace loom::cpu_test {

/// One operand: a 64-byte aligned buffer and its type.
struct Operand {
  BufferPtr buffer;
  ops::TensorType type;
  backends::ConstView view() const { return {buffer->data(), type}; }
};

/// Values: uniform in [lo, hi] (integers rounded, bool = coin flip).
inline Operand random_operand(const Shape& shape, DType dtype, uint32_t seed, double lo = -2.0,
                              double hi = 2.0) {
  Operand o{make_buffer(std::max<size_t>(1, numel(shape) * dtype_size(dtype))), {shape, dtype}};
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < numel(shape); ++i) {
    double v = dist(gen);
    if (dtype == DType::boolean)
      v = v > (lo + hi) / 2;
    else if (!is_floating(dtype))
      v = std::round(v);
    store_from_double(o.buffer->data(), dtype, i, v);
  }
  return o;
}

/// An operand holding `values` converted to `dtype`.
inline Operand operand_of(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Operand o{make_buffer(std::max<size_t>(1, numel(shape) * dtype_size(dtype))), {shape, dtype}};
  for (size_t i = 0; i < values.size(); ++i)
    store_from_double(o.buffer->data(), dtype, i, values[i]);
  return o;
}

/// Runs `op` on `backend`; the output type comes from shape inference.
inline std::vector<double> run_on(const backends::KernelBackend& backend, ops::OpKind op,
                                  const ops::Attrs& attrs, const std::vector<Operand>& inputs) {
  std::vector<ops::TensorType> types;
  for (const Operand& in : inputs) types.push_back(in.type);
  ops::TensorType out_type = ops::infer_type(op, types, attrs);
  BufferPtr out = make_buffer(std::max<size_t>(1, out_type.nbytes()));
  std::memset(out->data(), 0xA5, out_type.nbytes());  // garbage: every element must be written
  backends::OpCall call{op, &attrs, {}, {out->data(), out_type}};
  for (const Operand& in : inputs) call.inputs.push_back(in.view());
  backend.run(call);
  std::vector<double> values(out_type.numel());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = load_as_double(out->data(), out_type.dtype, i);
  return values;
}

struct Tolerance {
  double rtol = 1e-6;
  double atol = 1e-6;
};

/// Default tolerance for a result dtype: f32 1e-6 relative (absolute floor
/// 1e-6), bf16 1e-2, f16 1e-3, integers and bool exact.
inline Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return {1e-6, 1e-6};
    case DType::bf16:
      return {1e-2, 1e-2};
    case DType::f16:
      return {1e-3, 1e-3};
    default:
      return {0, 0};
  }
}

/// Checks cpu == reference for one op call; `what` names the case.
inline void expect_match(ops::OpKind op, const ops::Attrs& attrs,
                         const std::vector<Operand>& inputs, const std::string& what,
                         Tolerance tol) {
  std::vector<double> ref = run_on(backends::reference_backend(), op, attrs, inputs);
  std::vector<double> cpu = run_on(backends::cpu_backend(), op, attrs, inputs);
  ASSERT_EQ(ref.size(), cpu.size()) << what;
  double max_diff = 0;
  int bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < ref.size(); ++i) {
    bool both_nan = std::isnan(ref[i]) && std::isnan(cpu[i]);
    bool same_inf = std::isinf(ref[i]) && ref[i] == cpu[i];
    double diff = std::fabs(ref[i] - cpu[i]);
    bool ok = both_nan || same_inf || diff <= tol.rtol * std::fabs(ref[i]) + tol.atol;
    if (!both_nan && !same_inf && !std::isnan(diff)) max_diff = std::max(max_diff, diff);
    if (!ok && bad++ < 5) first << "\n  [" << i << "] reference " << ref[i] << " cpu " << cpu[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << ref.size() << " elements differ, max diff "
                    << max_diff << first.str();
}

inline void expect_match(ops::OpKind op, const ops::Attrs& attrs,
                         const std::vector<Operand>& inputs, const std::string& what) {
  std::vector<ops::TensorType> types;
  for (const Operand& in : inputs) types.push_back(in.type);
  DType out = ops::infer_type(op, types, attrs).dtype;
  expect_match(op, attrs, inputs, what, tolerance_for(out));
}

/// "f32[2,3]" for messages.
inline std::string describe(const Operand& o) { return ops::to_string(o.type); }

}  // namespace loom::cpu_test
