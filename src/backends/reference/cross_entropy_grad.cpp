// Reference kernels of the two gradient ops of cross-entropy, plain loops in
// double (the oracle for the cpu kernels and the fused pass):
//   cross_entropy_backward(logits [N,C], target [N], grad []) -> [N,C]:
//     d logits = (softmax(logits) - (1-e) onehot(target) - e/C)
//                * grad / max(count, 1) on rows whose target != ignore_index,
//     0 on ignored rows (count = number of non-ignored rows). This is the
//     derivative of cross_entropy's mean with label smoothing e, as
//     torch.nn.CrossEntropyLoss defines it; with every row ignored the loss
//     is NaN but the gradient 0, as in PyTorch.
//   fused_linear_cross_entropy(input [N,D], weight [C,D], target [N], grad [])
//     -> f32[C+N+1, D]: with logits = input weight^T, rows [0, C) are
//     d weight = d_logits^T input, rows [C, C+N) d input = d_logits weight,
//     and element [C+N, 0] the loss cross_entropy(logits, target) (rest 0).
#include <cmath>
#include <vector>

#include "backends/reference/reference.h"
#include "loom/error.h"

namespace loom::backends::reference {
namespace {

struct Targets {
  std::vector<int64_t> t;
  int64_t count = 0;  // rows not ignored
};

Targets load_targets(const ConstView& target, int64_t n, int64_t classes, int64_t ignore,
                     const char* op) {
  Targets r;
  for (int64_t i = 0; i < n; ++i) {
    int64_t t = target.type.dtype == DType::i64 ? target.as<int64_t>()[i] : target.as<int32_t>()[i];
    if (t != ignore) {
      LOOM_CHECK(t >= 0 && t < classes, "[", op, "] target ", t, " is out of range for ", classes,
                 " classes");
      ++r.count;
    }
    r.t.push_back(t);
  }
  return r;
}

// Loss of one row and, in `dz`, its gradient scaled by `scale`.
double row_grad(const double* z, double* dz, int64_t classes, int64_t t, double eps, double scale) {
  double m = -INFINITY, s = 0, sum_logp = 0;
  for (int64_t k = 0; k < classes; ++k) m = std::max(m, z[k]);
  for (int64_t k = 0; k < classes; ++k) s += std::exp(z[k] - m);
  double lse = m + std::log(s);
  for (int64_t k = 0; k < classes; ++k) {
    sum_logp += z[k] - lse;
    double hot = k == t ? 1.0 - eps : 0.0;
    dz[k] = (std::exp(z[k] - lse) - hot - eps / double(classes)) * scale;
  }
  return (1 - eps) * (lse - z[t]) - eps / double(classes) * sum_logp;
}

}  // namespace

void ref_cross_entropy_backward(const OpCall& c) {
  int64_t n = c.inputs[0].type.shape[0], classes = c.inputs[0].type.shape[1];
  Targets tg =
      load_targets(c.inputs[1], n, classes, c.attrs->ignore_index, "cross_entropy_backward");
  std::vector<double> x = load(c.inputs[0]), g = load(c.inputs[2]), d(x.size(), 0.0);
  double scale = g[0] / double(std::max<int64_t>(tg.count, 1));
  for (int64_t i = 0; i < n; ++i)
    if (tg.t[i] != c.attrs->ignore_index)
      row_grad(&x[i * classes], &d[i * classes], classes, tg.t[i], c.attrs->label_smoothing, scale);
  store(c.output, d);
}

void ref_fused_linear_cross_entropy(const OpCall& c) {
  int64_t n = c.inputs[0].type.shape[0], dim = c.inputs[0].type.shape[1];
  int64_t classes = c.inputs[1].type.shape[0];
  Targets tg =
      load_targets(c.inputs[2], n, classes, c.attrs->ignore_index, "fused_linear_cross_entropy");
  std::vector<double> h = load(c.inputs[0]), w = load(c.inputs[1]), g = load(c.inputs[3]);
  std::vector<double> z(classes), dz(classes), out((classes + n + 1) * dim, 0.0);
  double* dw = out.data();
  double* dh = out.data() + classes * dim;
  double scale = g[0] / double(std::max<int64_t>(tg.count, 1)), total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (tg.t[i] == c.attrs->ignore_index) continue;
    for (int64_t k = 0; k < classes; ++k) {
      z[k] = 0;
      for (int64_t j = 0; j < dim; ++j) z[k] += h[i * dim + j] * w[k * dim + j];
    }
    total += row_grad(z.data(), dz.data(), classes, tg.t[i], c.attrs->label_smoothing, scale);
    for (int64_t k = 0; k < classes; ++k)
      for (int64_t j = 0; j < dim; ++j) {
        dh[i * dim + j] += dz[k] * w[k * dim + j];
        dw[k * dim + j] += dz[k] * h[i * dim + j];
      }
  }
  out[(classes + n) * dim] = tg.count ? total / double(tg.count) : NAN;
  store(c.output, out);
}

}  // namespace loom::backends::reference
