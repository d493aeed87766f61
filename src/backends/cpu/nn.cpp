// Optimized softmax, log_softmax, layer_norm and cross_entropy. Same formulas
// as the reference kernels (max-shifted softmax; layer_norm with biased
// variance and eps inside the sqrt; cross_entropy mean over non-ignored
// targets with label smoothing), computed in f32 with double accumulators for
// the sums (normalizer, mean, variance, loss total), one pass per row for the
// last axis and vectorized over columns for other axes. bf16/f16 inputs are
// converted to f32 and the result rounded back.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec_math.h"
#include "backends/reference/reference.h"
#include "core/parallel.h"
#include "loom/error.h"

namespace loom::backends::cpu {
namespace {

constexpr int64_t kColumns = 256;  // columns per task when the axis is not last

int64_t row_grain(int64_t row_len) {
  return std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, row_len));
}

void softmax_row(const float* x, float* y, int64_t n, bool log) {
  float m = vm::max(x, n);
  double z = vm::exp_shift_sum(x, y, n, m);
  if (log) {
    float lz = static_cast<float>(std::log(z));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - lz;
  } else {
    float inv = static_cast<float>(1.0 / z);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

// Softmax over the middle dim of [size, inner] for columns [0, w): x and y
// point at column j0 of one outer slice.
void softmax_columns(const float* x, float* y, int64_t size, int64_t inner, int64_t w, bool log) {
  float m[kColumns];
  double z[kColumns] = {};
  std::fill(m, m + w, -std::numeric_limits<float>::infinity());
  for (int64_t k = 0; k < size; ++k)
    for (int64_t j = 0; j < w; ++j) m[j] = m[j] < x[k * inner + j] ? x[k * inner + j] : m[j];
  for (int64_t k = 0; k < size; ++k) {
    float* yr = y + k * inner;
    for (int64_t j = 0; j < w; ++j) yr[j] = x[k * inner + j] - m[j];
    vm::exp(yr, yr, w);
    for (int64_t j = 0; j < w; ++j) z[j] += yr[j];
  }
  for (int64_t k = 0; k < size; ++k) {
    float* yr = y + k * inner;
    if (log) {
      for (int64_t j = 0; j < w; ++j)
        yr[j] = (x[k * inner + j] - m[j]) - static_cast<float>(std::log(z[j]));
    } else {
      for (int64_t j = 0; j < w; ++j) yr[j] *= static_cast<float>(1.0 / z[j]);
    }
  }
}

void softmax_any(const OpCall& call, bool log) {
  reference::AxisSplit s = reference::split_at(call.inputs[0].type.shape, call.attrs->axis);
  if (call.output.type.numel() == 0) return;
  F32Input in(call.inputs[0]);
  F32Output out(call.output);
  const float* x = in.data();
  float* y = out.data();
  if (s.inner == 1) {
    parallel_for(s.outer, row_grain(s.size), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) softmax_row(x + o * s.size, y + o * s.size, s.size, log);
    });
  } else {
    int64_t blocks = (s.inner + kColumns - 1) / kColumns;
    parallel_for(s.outer * blocks, row_grain(s.size * std::min(kColumns, s.inner)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t u = b; u < e; ++u) {
                     int64_t o = u / blocks, j0 = (u % blocks) * kColumns;
                     int64_t off = o * s.size * s.inner + j0;
                     softmax_columns(x + off, y + off, s.size, s.inner,
                                     std::min(kColumns, s.inner - j0), log);
                   }
                 });
  }
  out.finish();
}

}  // namespace

void cpu_softmax(const OpCall& call) { softmax_any(call, false); }
void cpu_log_softmax(const OpCall& call) { softmax_any(call, true); }

void cpu_layer_norm(const OpCall& call) {
  int64_t dim = call.inputs[0].type.shape.back();
  if (dim == 0 || call.output.type.numel() == 0) return;
  int64_t rows = call.inputs[0].type.numel() / dim;
  F32Input in(call.inputs[0]), weight(call.inputs[1]), bias(call.inputs[2]);
  F32Output out(call.output);
  const float *x = in.data(), *w = weight.data(), *bs = bias.data();
  float* y = out.data();
  double eps = call.attrs->eps;
  parallel_for(rows, row_grain(dim), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = x + r * dim;
      float* yr = y + r * dim;
      double mean = vm::sum(xr, dim) / double(dim);
      double var = vm::sum_sq_dev(xr, dim, mean) / double(dim);
      float mf = static_cast<float>(mean), rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
      for (int64_t j = 0; j < dim; ++j) yr[j] = (xr[j] - mf) * rstd * w[j] + bs[j];
    }
  });
  out.finish();
}

void cpu_cross_entropy(const OpCall& call) {
  int64_t n = call.inputs[0].type.shape[0], classes = call.inputs[0].type.shape[1];
  const ConstView& target = call.inputs[1];
  int64_t ignore = call.attrs->ignore_index;
  double eps = call.attrs->label_smoothing;
  std::vector<int64_t> t = to_i64(target);
  for (int64_t i = 0; i < n; ++i)  // validate before any parallel work
    LOOM_CHECK(t[i] == ignore || (t[i] >= 0 && t[i] < classes), "[cross_entropy] target ", t[i],
               " is out of range for ", classes, " classes");
  std::vector<double> loss(n, 0.0);
  if (classes > 0 && n > 0) {
    F32Input in(call.inputs[0]);
    const float* x = in.data();
    parallel_for(n, row_grain(classes), [&](int64_t b, int64_t e) {
      std::vector<float> scratch(classes);
      for (int64_t i = b; i < e; ++i) {
        if (t[i] == ignore) continue;
        const float* row = x + i * classes;
        float m = vm::max(row, classes);
        double lse = m + std::log(vm::exp_shift_sum(row, scratch.data(), classes, m));
        double sum_logp = vm::sum(row, classes) - double(classes) * lse;
        loss[i] = (1 - eps) * (lse - row[t[i]]) - eps / double(classes) * sum_logp;
      }
    });
  }
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    if (t[i] != ignore) total += loss[i], ++count;
  float result =
      count ? static_cast<float>(total / double(count)) : std::numeric_limits<float>::quiet_NaN();
  store_f32(&result, 1, call.output.data, call.output.type.dtype, 0);
}

}  // namespace loom::backends::cpu
