// Gradient rules of the elementwise, reduction and matmul ops. Each returns
// one gradient per operand, summed back over broadcast dims (sum_to) and
// cast to the operand's dtype; integer operands get none.
#include <cmath>
#include <numbers>

#include "autograd/rules.h"
#include "loom/ops.h"
#include "ops/infer.h"

namespace loom::autograd::rules {
namespace {

// g reduced to the operand's shape and cast to its dtype; undefined for
// operands that cannot carry a gradient.
Tensor fit(const Tensor& g, const Tensor& input) {
  if (!is_floating(input.dtype())) return Tensor();
  return cast(sum_to(g, input.shape()), input.dtype());
}

// Broadcasts a reduced gradient (or output) back to the input shape.
Tensor unreduce(const Tensor& t, const GradNode& n) {
  Shape keep = ops::reduced_shape(in(n, 0).shape(), n.attrs.axes, true);
  return expand(reshape(t, keep), in(n, 0).shape());
}

int64_t reduced_count(const GradNode& n) {
  return in(n, 0).numel() /
         std::max<int64_t>(1, numel(ops::reduced_shape(in(n, 0).shape(), n.attrs.axes, true)));
}

// A bf16/f16 value widened to f32 (other dtypes unchanged): the gelu
// gradients' own gradients compute in f32 and round once, as the
// gelu_backward ops do (and torch's kernel for a bf16 input), instead of
// rounding after each op of the formula.
Tensor widen_low_precision(const Tensor& t) {
  return t.dtype() == DType::bf16 || t.dtype() == DType::f16 ? cast(t, DType::f32) : t;
}
}  // namespace

std::vector<Tensor> grad_abs(const GradNode& n, const Tensor& g) { return {g * sign(in(n, 0))}; }
std::vector<Tensor> grad_neg(const GradNode& n, const Tensor& g) { return {neg(g)}; }
std::vector<Tensor> grad_exp(const GradNode& n, const Tensor& g) { return {g * n.output}; }
std::vector<Tensor> grad_log(const GradNode& n, const Tensor& g) { return {g / in(n, 0)}; }
std::vector<Tensor> grad_sqrt(const GradNode& n, const Tensor& g) { return {g * 0.5 / n.output}; }
std::vector<Tensor> grad_rsqrt(const GradNode& n, const Tensor& g) {
  return {g * -0.5 * n.output / in(n, 0)};
}
std::vector<Tensor> grad_tanh(const GradNode& n, const Tensor& g) {
  return {g * (1.0 - n.output * n.output)};
}
std::vector<Tensor> grad_erf(const GradNode& n, const Tensor& g) {
  const Tensor& x = in(n, 0);
  return {g * (2.0 / std::sqrt(std::numbers::pi)) * exp(neg(x * x))};
}
std::vector<Tensor> grad_sigmoid(const GradNode& n, const Tensor& g) {
  return {g * n.output * (1.0 - n.output)};
}
std::vector<Tensor> grad_relu(const GradNode& n, const Tensor& g) {
  return {where(gt(in(n, 0), 0.0), g, 0.0)};
}
std::vector<Tensor> grad_sin(const GradNode& n, const Tensor& g) { return {g * cos(in(n, 0))}; }
std::vector<Tensor> grad_cos(const GradNode& n, const Tensor& g) {
  return {neg(g * sin(in(n, 0)))};
}
std::vector<Tensor> grad_gelu(const GradNode& n, const Tensor& g) {
  // One gelu_backward op: g * (Phi(x) + x phi(x)), in f32, rounded once.
  return {cast(autograd::apply(ops::OpKind::k_gelu_backward, {g, in(n, 0)}, {}), g.dtype())};
}
std::vector<Tensor> grad_gelu_tanh(const GradNode& n, const Tensor& g) {
  return {cast(autograd::apply(ops::OpKind::k_gelu_tanh_backward, {g, in(n, 0)}, {}), g.dtype())};
}
// Double backward: out = g * f'(x), so d/dg = f'(x) (the same op on the
// incoming gradient) and d/dx = g * f''(x), computed in f32 for bf16/f16.
std::vector<Tensor> grad_gelu_backward(const GradNode& n, const Tensor& gg) {
  // f''(x) = phi(x) (2 - x^2) for the exact GELU.
  const Tensor &g = in(n, 0), &x = in(n, 1);
  const Tensor xw = widen_low_precision(x);
  Tensor pdf = exp(xw * xw * -0.5) * (1.0 / std::sqrt(2.0 * std::numbers::pi));
  Tensor d2 = pdf * (2.0 - xw * xw);
  return {fit(autograd::apply(ops::OpKind::k_gelu_backward, {gg, x}, {}), g),
          fit(widen_low_precision(gg) * widen_low_precision(g) * d2, x)};
}
std::vector<Tensor> grad_gelu_tanh_backward(const GradNode& n, const Tensor& gg) {
  // With u = k (x + c x^3), t = tanh u, u' = k (1 + 3c x^2), u'' = 6kc x:
  // f''(x) = (1 - t^2) (u' - x t u'^2 + 0.5 x u'').
  const Tensor &g = in(n, 0), &x = in(n, 1);
  const Tensor xw = widen_low_precision(x);
  const double k = std::sqrt(2.0 / std::numbers::pi), c = 0.044715;
  Tensor t = tanh((xw + xw * xw * xw * c) * k);
  Tensor du = (xw * xw * (3.0 * c) + 1.0) * k;
  Tensor d2 = (1.0 - t * t) * (du - xw * t * du * du + xw * xw * (3.0 * k * c));
  return {fit(autograd::apply(ops::OpKind::k_gelu_tanh_backward, {gg, x}, {}), g),
          fit(widen_low_precision(gg) * widen_low_precision(g) * d2, x)};
}
std::vector<Tensor> grad_pow_scalar(const GradNode& n, const Tensor& g) {
  double e = n.attrs.exponent;
  return {g * e * pow(in(n, 0), e - 1.0)};
}
std::vector<Tensor> grad_cast(const GradNode& n, const Tensor& g) {
  // An integer or bool result is piecewise constant: nothing flows back.
  if (!is_floating(n.output.dtype())) return {Tensor()};
  return {fit(g, in(n, 0))};
}

std::vector<Tensor> grad_add(const GradNode& n, const Tensor& g) {
  return {fit(g, in(n, 0)), fit(g, in(n, 1))};
}
std::vector<Tensor> grad_sub(const GradNode& n, const Tensor& g) {
  return {fit(g, in(n, 0)), fit(neg(g), in(n, 1))};
}
std::vector<Tensor> grad_mul(const GradNode& n, const Tensor& g) {
  return {fit(g * in(n, 1), in(n, 0)), fit(g * in(n, 0), in(n, 1))};
}
std::vector<Tensor> grad_div(const GradNode& n, const Tensor& g) {
  const Tensor &a = in(n, 0), &b = in(n, 1);
  return {fit(g / b, a), fit(neg(g * a / (b * b)), b)};
}
std::vector<Tensor> grad_maximum(const GradNode& n, const Tensor& g) {
  // Ties split the gradient evenly, as torch.maximum.
  const Tensor &a = in(n, 0), &b = in(n, 1);
  Tensor share = cast(gt(a, b), g.dtype()) + cast(eq(a, b), g.dtype()) * 0.5;
  return {fit(g * share, a), fit(g * (1.0 - share), b)};
}
std::vector<Tensor> grad_minimum(const GradNode& n, const Tensor& g) {
  const Tensor &a = in(n, 0), &b = in(n, 1);
  Tensor share = cast(lt(a, b), g.dtype()) + cast(eq(a, b), g.dtype()) * 0.5;
  return {fit(g * share, a), fit(g * (1.0 - share), b)};
}
std::vector<Tensor> grad_pow(const GradNode& n, const Tensor& g) {
  const Tensor &a = in(n, 0), &b = in(n, 1);
  Tensor da = g * b * pow(a, b - 1.0);
  Tensor db = g * n.output * log(where(gt(a, 0.0), a, 1.0));  // 0 where a <= 0
  return {fit(da, a), fit(db, b)};
}
std::vector<Tensor> grad_where(const GradNode& n, const Tensor& g) {
  const Tensor& c = in(n, 0);
  return {Tensor(), fit(where(c, g, 0.0), in(n, 1)), fit(where(c, zeros_like(g), g), in(n, 2))};
}

std::vector<Tensor> grad_sum(const GradNode& n, const Tensor& g) { return {unreduce(g, n)}; }
std::vector<Tensor> grad_mean(const GradNode& n, const Tensor& g) {
  return {unreduce(g, n) * (1.0 / double(reduced_count(n)))};
}
std::vector<Tensor> grad_max(const GradNode& n, const Tensor& g) {
  // Evenly among the maximal elements, as torch.amax.
  Tensor hit = cast(eq(in(n, 0), unreduce(n.output, n)), g.dtype());
  Tensor count = unreduce(sum(hit, n.attrs.axes, true), n);
  return {unreduce(g, n) * hit / count};
}
std::vector<Tensor> grad_min(const GradNode& n, const Tensor& g) { return grad_max(n, g); }
std::vector<Tensor> grad_var(const GradNode& n, const Tensor& g) {
  const Tensor& x = in(n, 0);
  Tensor centered = x - unreduce(mean(x, n.attrs.axes, true), n);
  double denom = double(reduced_count(n) - n.attrs.correction);
  return {unreduce(g, n) * centered * (2.0 / denom)};
}

std::vector<Tensor> grad_matmul(const GradNode& n, const Tensor& g) {
  const Tensor &a = in(n, 0), &b = in(n, 1);
  bool ta = n.attrs.trans_a, tb = n.attrs.trans_b;
  LOOM_CHECK(n.attrs.perm_a.empty() && n.attrs.perm_b.empty() && n.attrs.perm_out.empty(),
             "[matmul] no gradient rule for layout attrs (perm_a/perm_b/perm_out are set only by "
             "the compiler's matmul_layout pass)");
  Tensor da = ta ? matmul(b, g, tb, true) : matmul(g, b, false, !tb);
  Tensor db = tb ? matmul(g, a, true, ta) : matmul(a, g, !ta, false);
  return {fit(da, a), fit(db, b)};
}

}  // namespace loom::autograd::rules
