// Reference kernels of the composite ops: softmax, log_softmax (max-shifted),
// layer_norm (biased variance, eps inside the sqrt: Ba et al. 2016, as
// torch.nn.LayerNorm), cross_entropy (mean over targets != ignore_index, with
// label smoothing as torch.nn.CrossEntropyLoss: (1-e)*nll + e/C * sum -log p),
// scaled-dot-product attention (Vaswani et al. 2017; causal mask aligned top
// left as torch's is_causal; bool mask true = attend, float mask added; a row
// with nothing to attend gives zeros; dropout p = attrs.dropout_p > 0 on the
// probabilities: element (b, i, j) kept when philox::uniform(seed, offset,
// (b T + i) S + j) >= p and scaled by 1/(1-p), the dropout op's draw on the
// [..., T, S] probabilities).
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/reference/attention_dims.h"
#include "backends/reference/reference.h"
#include "core/philox.h"
#include "loom/error.h"

namespace loom::backends::reference {
namespace {

void softmax_rows(const OpCall& c, bool log) {
  AxisSplit s = split_at(c.inputs[0].type.shape, c.attrs->axis);
  std::vector<double> x = load(c.inputs[0]), r(x.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t k) { return (o * s.size + k) * s.inner + i; };
      double m = -INFINITY, z = 0;
      for (int64_t k = 0; k < s.size; ++k) m = std::max(m, x[at(k)]);
      for (int64_t k = 0; k < s.size; ++k) z += std::exp(x[at(k)] - m);
      for (int64_t k = 0; k < s.size; ++k)
        r[at(k)] = log ? x[at(k)] - m - std::log(z) : std::exp(x[at(k)] - m) / z;
    }
  store(c.output, r);
}

}  // namespace

void ref_softmax(const OpCall& c) { softmax_rows(c, false); }
void ref_log_softmax(const OpCall& c) { softmax_rows(c, true); }

void ref_layer_norm(const OpCall& c) {
  int64_t dim = c.inputs[0].type.shape.back();
  int64_t rows = dim == 0 ? 0 : c.inputs[0].type.numel() / dim;
  std::vector<double> x = load(c.inputs[0]), w = load(c.inputs[1]), b = load(c.inputs[2]);
  std::vector<double> r(x.size());
  for (int64_t row = 0; row < rows; ++row) {
    const double* xr = x.data() + row * dim;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < dim; ++j) mean += xr[j];
    mean /= double(dim);
    for (int64_t j = 0; j < dim; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= double(dim);
    double rstd = 1.0 / std::sqrt(var + c.attrs->eps);
    for (int64_t j = 0; j < dim; ++j) r[row * dim + j] = (xr[j] - mean) * rstd * w[j] + b[j];
  }
  store(c.output, r);
}

void ref_cross_entropy(const OpCall& c) {
  int64_t n = c.inputs[0].type.shape[0], classes = c.inputs[0].type.shape[1];
  double eps = c.attrs->label_smoothing;
  std::vector<double> x = load(c.inputs[0]);
  const ConstView& target = c.inputs[1];
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t t = target.type.dtype == DType::i64 ? target.as<int64_t>()[i] : target.as<int32_t>()[i];
    if (t == c.attrs->ignore_index) continue;
    LOOM_CHECK(t >= 0 && t < classes, "[cross_entropy] target ", t, " is out of range for ",
               classes, " classes");
    const double* row = x.data() + i * classes;
    double m = -INFINITY, z = 0, sum_logp = 0;
    for (int64_t k = 0; k < classes; ++k) m = std::max(m, row[k]);
    for (int64_t k = 0; k < classes; ++k) z += std::exp(row[k] - m);
    double lse = m + std::log(z);
    for (int64_t k = 0; k < classes; ++k) sum_logp += row[k] - lse;
    total += (1 - eps) * (lse - row[t]) - eps / double(classes) * sum_logp;
    ++count;
  }
  store(c.output, {count ? total / double(count) : NAN});
}

void ref_attention(const OpCall& c) {
  const auto [t_len, d, s_len, dv, batch, group, scale, mask_at, drop, seed, offset] =
      attention_dims(c, 3);
  std::vector<double> q = load(c.inputs[0]), k = load(c.inputs[1]), v = load(c.inputs[2]);
  bool has_mask = mask_at >= 0;
  std::vector<double> mask = has_mask ? load(c.inputs[mask_at]) : std::vector<double>{};
  bool bool_mask = has_mask && c.inputs[mask_at].type.dtype == DType::boolean;
  Shape scores_shape = c.inputs[0].type.shape;
  scores_shape.back() = s_len;
  BroadcastIndex mask_index(has_mask ? c.inputs[mask_at].type.shape : Shape{}, scores_shape);
  std::vector<double> out(c.output.type.numel(), 0.0), p(s_len);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < t_len; ++i) {
      int64_t kb = b / group;
      double m = -INFINITY;
      for (int64_t j = 0; j < s_len; ++j) {
        double sc = 0;
        for (int64_t e = 0; e < d; ++e)
          sc += q[(b * t_len + i) * d + e] * k[(kb * s_len + j) * d + e];
        sc *= scale;
        if (c.attrs->causal && j > i) sc = -INFINITY;
        if (has_mask) {
          double mv = mask[mask_index((b * t_len + i) * s_len + j)];
          sc = bool_mask ? (mv != 0 ? sc : -INFINITY) : sc + mv;
        }
        p[j] = sc;
        m = std::max(m, sc);
      }
      if (m == -INFINITY) continue;  // nothing to attend: zeros
      double z = 0;
      for (int64_t j = 0; j < s_len; ++j) z += (p[j] = std::exp(p[j] - m));
      for (int64_t j = 0; j < s_len; ++j) {
        double w = p[j] / z;
        if (drop > 0) {
          uint64_t index = uint64_t((b * t_len + i) * s_len + j);
          w = philox::uniform(seed, offset, index) >= drop ? w / (1.0 - drop) : 0.0;
        }
        for (int64_t e = 0; e < dv; ++e)
          out[(b * t_len + i) * dv + e] += w * v[(kb * s_len + j) * dv + e];
      }
    }
  store(c.output, out);
}

}  // namespace loom::backends::reference
