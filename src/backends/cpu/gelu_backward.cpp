// The GELU gradient ops gelu_backward / gelu_tanh_backward (grad * gelu'(x),
// aten's gelu_backward with approximate='none' | 'tanh'): one vectorized f32
// function over a run, gelu_backward_f32, shared by the eager kernel below
// and the fused interpreter (fused.cpp), so eager and lazy give the same bits.
// Forms without cancellation, as the forward kernels (elementwise_unary.cpp):
//   exact: gelu'(x) = Phi(x) + x phi(x), Phi(x) = 0.5 erfc(-x / sqrt 2),
//          phi(x) = exp(-x^2 / 2) / sqrt(2 pi);
//   tanh:  with u = k (x + c x^3), t = tanh u, e = exp(-2u), s = 1 / (1 + e)
//          (= 0.5 (1 + t)) and r = e s (= 0.5 (1 - t), 1 where e overflows),
//          gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) u' = s + 2 x u' s r,
//          u' = k (1 + 3c x^2), k = sqrt(2/pi), c = 0.044715.
// bf16/f16 operands are converted to f32 a chunk at a time; the result is
// rounded once. Operands broadcast (NumPy rules) through BroadcastPlan.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec_math.h"
#include "core/parallel.h"

namespace loom::backends::cpu {
namespace {

using ops::OpKind;

// out = g * gelu'(x), exact GELU (n <= kChunk; out may equal g or x).
void exact_grad(const float* g, const float* x, float* out, int64_t n) {
  const float neg_inv_sqrt2 = -1.0f / std::numbers::sqrt2_v<float>;
  const float inv_sqrt_2pi = static_cast<float>(1.0 / std::sqrt(2.0 * std::numbers::pi));
  float cdf2[kChunk], pdf[kChunk];
  for (int64_t i = 0; i < n; ++i) {
    cdf2[i] = x[i] * neg_inv_sqrt2;
    pdf[i] = -0.5f * (x[i] * x[i]);
  }
  vm::erfc(cdf2, cdf2, n);  // 2 Phi(x)
  vm::exp(pdf, pdf, n);     // sqrt(2 pi) phi(x)
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] * (0.5f * cdf2[i] + x[i] * (inv_sqrt_2pi * pdf[i]));
}

// out = g * gelu'(x), tanh GELU (n <= kChunk; out may equal g or x).
void tanh_grad(const float* g, const float* x, float* out, int64_t n) {
  const float k = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  const float c = 0.044715f, big = std::numeric_limits<float>::max();
  float e[kChunk];
  for (int64_t i = 0; i < n; ++i) e[i] = (-2.0f * k) * (x[i] + c * x[i] * x[i] * x[i]);
  vm::exp(e, e, n);  // exp(-2u)
  for (int64_t i = 0; i < n; ++i) {
    float s = 1.0f / (1.0f + e[i]);
    float r = e[i] <= big ? e[i] * s : 1.0f;
    float du = k * (1.0f + (3.0f * c) * (x[i] * x[i]));
    out[i] = g[i] * (s + 2.0f * x[i] * du * s * r);
  }
}

// dst[0, len) = operand v from element `offset` on, stride 0 (one element
// repeated) or 1; points into v itself when it is f32 and contiguous.
const float* operand_run(const ConstView& v, int64_t offset, int64_t stride, int64_t len,
                         float* buf) {
  if (stride && v.type.dtype == DType::f32) return v.as<float>() + offset;
  load_f32(v.data, v.type.dtype, offset, stride ? len : 1, buf);
  if (!stride) std::fill(buf + 1, buf + len, buf[0]);
  return buf;
}

}  // namespace

// The scratch arrays are written before they are read (GCC cannot see that
// through the vm:: calls).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
void gelu_backward_f32(OpKind op, const float* g, const float* x, float* out, int64_t n) {
  if (op == OpKind::k_gelu_backward)
    exact_grad(g, x, out, n);
  else
    tanh_grad(g, x, out, n);
}
#pragma GCC diagnostic pop

void run_gelu_backward(const OpCall& call) {
  const ConstView &g = call.inputs[0], &x = call.inputs[1];
  const MutView& out = call.output;
  int64_t n = out.type.numel();
  if (n == 0) return;
  if (g.type.dtype == DType::f32 && x.type.dtype == DType::f32 && out.type.dtype == DType::f32 &&
      g.type.shape == out.type.shape && x.type.shape == out.type.shape) {
    const float *pg = g.as<float>(), *px = x.as<float>();
    float* po = out.as<float>();
    parallel_for(n, kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t pos = begin; pos < end; pos += kChunk)
        gelu_backward_f32(call.op, pg + pos, px + pos, po + pos, std::min(kChunk, end - pos));
    });
    return;
  }
  BroadcastPlan plan(out.type.shape, {g.type.shape, x.type.shape});
  int64_t sg = plan.inner_stride(0), sx = plan.inner_stride(1);
  bool direct_out = out.type.dtype == DType::f32;
  parallel_for(n, kElementGrain, [&](int64_t begin, int64_t end) {
    float buf_g[kChunk], buf_x[kChunk], buf_o[kChunk];
    plan.for_each_segment(begin, end, kChunk, [&](int64_t pos, const auto& off, int64_t len) {
      const float* pg = operand_run(g, off[0], sg, len, buf_g);
      const float* px = operand_run(x, off[1], sx, len, buf_x);
      float* po = direct_out ? out.as<float>() + pos : buf_o;
      gelu_backward_f32(call.op, pg, px, po, len);
      if (!direct_out) store_f32(buf_o, len, out.data, out.type.dtype, pos);
    });
  });
}

}  // namespace loom::backends::cpu
