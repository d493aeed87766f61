// Reference elementwise kernels: unary math, broadcasting binary ops,
// comparisons, where, cast. GELU formulas: exact 0.5x(1+erf(x/sqrt 2)) and the
// tanh approximation 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) (Hendrycks &
// Gimpel 2016), as torch.nn.functional.gelu(approximate='none'|'tanh'); their
// derivatives for gelu_backward / gelu_tanh_backward (grad * gelu'(x)) as
// aten's gelu_backward: Phi(x) + x phi(x), and 0.5 (1 + t) + 0.5 x (1 - t^2)
// k (1 + 3c x^2) with t = tanh(k (x + c x^3)), k = sqrt(2/pi), c = 0.044715.
#include <cmath>
#include <functional>
#include <numbers>

#include "backends/reference/reference.h"
#include "loom/error.h"

namespace loom::backends::reference {
namespace {

void unary(const OpCall& call, const std::function<double(double)>& f) {
  std::vector<double> x = load(call.inputs[0]);
  for (double& v : x) v = f(v);
  store(call.output, x);
}

void binary(const OpCall& call, const std::function<double(double, double)>& f) {
  const Shape& out = call.output.type.shape;
  std::vector<double> a = load(call.inputs[0]), b = load(call.inputs[1]);
  BroadcastIndex ia(call.inputs[0].type.shape, out), ib(call.inputs[1].type.shape, out);
  std::vector<double> r(call.output.type.numel());
  for (int64_t i = 0; i < static_cast<int64_t>(r.size()); ++i) r[i] = f(a[ia(i)], b[ib(i)]);
  store(call.output, r);
}

double gelu_exact(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }
double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
// Phi(x) = 0.5 erfc(-x / sqrt 2) (no cancellation for x << 0), phi the N(0, 1) density.
double gelu_exact_grad(double x) {
  double cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
  double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return cdf + x * pdf;
}
double gelu_tanh_grad(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi), c = 0.044715;
  double t = std::tanh(k * (x + c * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * c * x * x);
}
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
bool is_int_result(const OpCall& call) { return !is_floating(call.output.type.dtype); }

}  // namespace

void ref_abs(const OpCall& c) {
  unary(c, [](double x) { return std::fabs(x); });
}
void ref_neg(const OpCall& c) {
  unary(c, [](double x) { return -x; });
}
void ref_exp(const OpCall& c) {
  unary(c, [](double x) { return std::exp(x); });
}
void ref_log(const OpCall& c) {
  unary(c, [](double x) { return std::log(x); });
}
void ref_sqrt(const OpCall& c) {
  unary(c, [](double x) { return std::sqrt(x); });
}
void ref_rsqrt(const OpCall& c) {
  unary(c, [](double x) { return 1.0 / std::sqrt(x); });
}
void ref_tanh(const OpCall& c) {
  unary(c, [](double x) { return std::tanh(x); });
}
void ref_erf(const OpCall& c) {
  unary(c, [](double x) { return std::erf(x); });
}
void ref_sigmoid(const OpCall& c) {
  unary(c, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}
void ref_relu(const OpCall& c) {  // NaN propagates, as torch.relu
  unary(c, [](double x) { return x > 0 || std::isnan(x) ? x : 0.0; });
}
void ref_gelu(const OpCall& c) { unary(c, gelu_exact); }
void ref_gelu_tanh(const OpCall& c) { unary(c, gelu_tanh); }
void ref_sin(const OpCall& c) {
  unary(c, [](double x) { return std::sin(x); });
}
void ref_cos(const OpCall& c) {
  unary(c, [](double x) { return std::cos(x); });
}
void ref_sign(const OpCall& c) {
  unary(c, [](double x) { return double((x > 0) - (x < 0)); });
}
void ref_cast(const OpCall& c) {
  unary(c, [](double x) { return x; });
}
void ref_pow_scalar(const OpCall& c) {
  double e = c.attrs->exponent;
  unary(c, [e](double x) { return std::pow(x, e); });
}

void ref_add(const OpCall& c) { binary(c, std::plus<double>()); }
void ref_sub(const OpCall& c) { binary(c, std::minus<double>()); }
void ref_mul(const OpCall& c) { binary(c, std::multiplies<double>()); }
void ref_div(const OpCall& c) {
  if (is_int_result(c)) {  // not reached: int / int promotes to f32 (true division)
    binary(c, [](double a, double b) { return b == 0 ? 0.0 : std::trunc(a / b); });
    return;
  }
  binary(c, std::divides<double>());
}
void ref_maximum(const OpCall& c) { binary(c, nan_max); }
void ref_minimum(const OpCall& c) { binary(c, nan_min); }
void ref_gelu_backward(const OpCall& c) {
  binary(c, [](double g, double x) { return g * gelu_exact_grad(x); });
}
void ref_gelu_tanh_backward(const OpCall& c) {
  binary(c, [](double g, double x) { return g * gelu_tanh_grad(x); });
}
void ref_pow(const OpCall& c) {
  if (is_int_result(c)) {  // as torch: no negative exponents for integer results
    for (double e : load(c.inputs[1]))
      LOOM_CHECK(e >= 0, "[pow] integers to negative integer powers are not allowed (exponent ", e,
                 ")");
  }
  binary(c, [](double a, double b) { return std::pow(a, b); });
}
void ref_eq(const OpCall& c) {
  binary(c, [](double a, double b) { return double(a == b); });
}
void ref_ne(const OpCall& c) {
  binary(c, [](double a, double b) { return double(a != b); });
}
void ref_lt(const OpCall& c) {
  binary(c, [](double a, double b) { return double(a < b); });
}
void ref_le(const OpCall& c) {
  binary(c, [](double a, double b) { return double(a <= b); });
}
void ref_gt(const OpCall& c) {
  binary(c, [](double a, double b) { return double(a > b); });
}
void ref_ge(const OpCall& c) {
  binary(c, [](double a, double b) { return double(a >= b); });
}

void ref_where(const OpCall& c) {
  const Shape& out = c.output.type.shape;
  std::vector<double> cond = load(c.inputs[0]), a = load(c.inputs[1]), b = load(c.inputs[2]);
  BroadcastIndex ic(c.inputs[0].type.shape, out), ia(c.inputs[1].type.shape, out),
      ib(c.inputs[2].type.shape, out);
  std::vector<double> r(c.output.type.numel());
  for (int64_t i = 0; i < static_cast<int64_t>(r.size()); ++i)
    r[i] = cond[ic(i)] != 0 ? a[ia(i)] : b[ib(i)];
  store(c.output, r);
}

void ref_full(const OpCall& c) {
  store(c.output, std::vector<double>(c.output.type.numel(), c.attrs->fill_value));
}

void ref_arange(const OpCall& c) {
  std::vector<double> r(c.output.type.numel());
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = c.attrs->range_start + c.attrs->range_step * double(i);
  store(c.output, r);
}

}  // namespace loom::backends::reference
