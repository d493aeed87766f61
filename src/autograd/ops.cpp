// The public op functions (loom/ops.h): normalize arguments (negative axes,
// -1 dims, Python-style slice bounds, scalar operands) and build one op node
// through autograd::apply.
#include "loom/ops.h"

#include <algorithm>
#include <cmath>

#include "autograd/engine.h"
#include "loom/autocast.h"
#include "loom/error.h"

namespace loom {
namespace {

using ops::Attrs;
using ops::OpKind;

Tensor op1(OpKind op, const Tensor& x, const Attrs& a = {}) { return autograd::apply(op, {x}, a); }
Tensor op2(OpKind op, const Tensor& x, const Tensor& y) { return autograd::apply(op, {x, y}, {}); }

using autograd::rank_of;

// A C++ number as a rank-0 operand next to `x` (PyTorch's Python-scalar rule).
Tensor scalar_like(const Tensor& x, double value, std::string_view op) {
  LOOM_CHECK(x.defined(), "[", op, "] operand is an undefined tensor");
  DType dtype = x.dtype();
  if (!is_floating(dtype) && value != std::trunc(value)) dtype = DType::f32;
  if (dtype == DType::boolean) dtype = DType::i64;  // bool + Python int is int64 in PyTorch
  // On the lazy device 0 and 1 are traced constants (the compiler simplifies
  // x*1, x+0); any other number is device data, a graph input, so a changing
  // learning rate or loss scale never recompiles.
  if (x.device().is_lazy() && (value == 0 || value == 1)) return full({}, value, dtype, x.device());
  return scalar_tensor(value, dtype, x.device());
}

std::vector<int64_t> norm_axes(const std::vector<int64_t>& axes, int64_t rank, const char* op) {
  std::vector<int64_t> out;
  for (int64_t ax : axes) out.push_back(normalize_axis(ax, rank, op));
  std::sort(out.begin(), out.end());
  return out;
}

Tensor reduce(OpKind op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim,
              const char* name) {
  Attrs a;
  a.axes = norm_axes(axes, rank_of(x, name), name);
  a.keepdim = keepdim;
  return op1(op, x, a);
}

}  // namespace

Tensor neg(const Tensor& x) { return op1(OpKind::k_neg, x); }
Tensor abs(const Tensor& x) { return op1(OpKind::k_abs, x); }
Tensor sign(const Tensor& x) { return op1(OpKind::k_sign, x); }
Tensor exp(const Tensor& x) { return op1(OpKind::k_exp, x); }
Tensor log(const Tensor& x) { return op1(OpKind::k_log, x); }
Tensor sqrt(const Tensor& x) { return op1(OpKind::k_sqrt, x); }
Tensor rsqrt(const Tensor& x) { return op1(OpKind::k_rsqrt, x); }
Tensor tanh(const Tensor& x) { return op1(OpKind::k_tanh, x); }
Tensor erf(const Tensor& x) { return op1(OpKind::k_erf, x); }
Tensor sigmoid(const Tensor& x) { return op1(OpKind::k_sigmoid, x); }
Tensor relu(const Tensor& x) { return op1(OpKind::k_relu, x); }
Tensor sin(const Tensor& x) { return op1(OpKind::k_sin, x); }
Tensor cos(const Tensor& x) { return op1(OpKind::k_cos, x); }

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate == "none") return op1(OpKind::k_gelu, x);
  if (approximate == "tanh") return op1(OpKind::k_gelu_tanh, x);
  fail("[gelu] approximate must be 'none' or 'tanh', got '", approximate, "'");
}

Tensor pow(const Tensor& x, double exponent) {
  Attrs a;
  a.exponent = exponent;
  return op1(OpKind::k_pow_scalar, x, a);
}

Tensor cast(const Tensor& x, DType dtype) {
  rank_of(x, "cast");
  if (x.dtype() == dtype) return x;
  Attrs a;
  a.dtype = dtype;
  return op1(OpKind::k_cast, x, a);
}

Tensor add(const Tensor& a, const Tensor& b) { return op2(OpKind::k_add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return op2(OpKind::k_sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return op2(OpKind::k_mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return op2(OpKind::k_div, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return op2(OpKind::k_maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return op2(OpKind::k_minimum, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return op2(OpKind::k_pow, a, b); }
Tensor add(const Tensor& a, double b) { return add(a, scalar_like(a, b, "add")); }
Tensor sub(const Tensor& a, double b) { return sub(a, scalar_like(a, b, "sub")); }
Tensor mul(const Tensor& a, double b) { return mul(a, scalar_like(a, b, "mul")); }
Tensor div(const Tensor& a, double b) { return div(a, scalar_like(a, b, "div")); }
Tensor maximum(const Tensor& a, double b) { return maximum(a, scalar_like(a, b, "maximum")); }
Tensor minimum(const Tensor& a, double b) { return minimum(a, scalar_like(a, b, "minimum")); }

Tensor eq(const Tensor& a, const Tensor& b) { return op2(OpKind::k_eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return op2(OpKind::k_ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return op2(OpKind::k_lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return op2(OpKind::k_le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return op2(OpKind::k_gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return op2(OpKind::k_ge, a, b); }
Tensor eq(const Tensor& a, double b) { return eq(a, scalar_like(a, b, "eq")); }
Tensor ne(const Tensor& a, double b) { return ne(a, scalar_like(a, b, "ne")); }
Tensor lt(const Tensor& a, double b) { return lt(a, scalar_like(a, b, "lt")); }
Tensor le(const Tensor& a, double b) { return le(a, scalar_like(a, b, "le")); }
Tensor gt(const Tensor& a, double b) { return gt(a, scalar_like(a, b, "gt")); }
Tensor ge(const Tensor& a, double b) { return ge(a, scalar_like(a, b, "ge")); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return autograd::apply(OpKind::k_where, {cond, a, b}, {});
}
Tensor where(const Tensor& cond, const Tensor& a, double b) {
  return where(cond, a, scalar_like(a, b, "where"));
}

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(OpKind::k_sum, x, axes, keepdim, "sum");
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(OpKind::k_mean, x, axes, keepdim, "mean");
}
Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(OpKind::k_max, x, axes, keepdim, "max");
}
Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(OpKind::k_min, x, axes, keepdim, "min");
}
Tensor var(const Tensor& x, const std::vector<int64_t>& axes, int64_t correction, bool keepdim) {
  Attrs a;
  a.axes = norm_axes(axes, rank_of(x, "var"), "var");
  a.keepdim = keepdim;
  a.correction = correction;
  return op1(OpKind::k_var, x, a);
}
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim) {
  return reduce(OpKind::k_argmax, x, {axis}, keepdim, "argmax");
}

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  Attrs at;
  at.trans_a = trans_a;
  at.trans_b = trans_b;
  // Autocast (loom/autocast.h): f32 operands are cast to the autocast dtype
  // and the result stays in it (torch.autocast's lower-precision list).
  if (is_autocast_enabled() && a.defined() && b.defined() && is_floating(a.dtype()) &&
      is_floating(b.dtype()) && (a.dtype() == DType::f32 || b.dtype() == DType::f32)) {
    DType low = autocast_dtype();
    return autograd::apply(OpKind::k_matmul, {cast(a, low), cast(b, low)}, at);
  }
  return autograd::apply(OpKind::k_matmul, {a, b}, at);
}

}  // namespace loom
