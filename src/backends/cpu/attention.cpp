// Optimized scaled-dot-product attention (Vaswani et al. 2017) with the
// reference's exact semantics: scores = scale q k^T (scale 0 = 1/sqrt(D)),
// causal mask j > i aligned top left, then the mask (bool: true = attend,
// false = -inf; float: added), softmax over keys, a row with nothing to
// attend gives zeros, then (attrs.dropout_p = p > 0) inverted dropout on the
// probabilities with the generator operand, element (b, i, j) drawing
// Philox stream index (b T + i) S + j as the dropout op on the [..., T, S]
// probabilities would. Work is split into tasks of kRows query rows of one
// batch item; each task computes its score block with a GEMM, the softmax
// rows in place, and its output block with a second GEMM, so the full
// [T, S] score matrix never exists (the blocking of FlashAttention, Dao et
// al. 2022, with whole key rows per block: on a CPU a [32, S] block fits in
// cache). Causal tasks skip keys past their last row (their weights are
// exactly 0). k and v may have fewer heads than q (grouped-query
// attention): a group of q heads reads one k/v head in place. The backward
// (attention_backward.cpp) recomputes the same blocks (attention_rows.h).
// A query of one row (T = 1: a generation step's decode) takes plain dot
// product loops instead of the two GEMMs: per head they are [1, D] x [D, S]
// and [1, S] x [S, Dv], too small for a library call's set-up (GPT-2 124M's
// 12 heads x 12 layers: 0.8 ms of a 22 ms token through sgemm). Its sums
// run in another order than the backward's recomputed GEMM blocks, so a
// T = 1 forward and its backward's scores may differ in the last bit.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/attention_rows.h"
#include "backends/cpu/convert.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/reference/reference.h"
#include "core/parallel.h"

namespace loom::backends::cpu {
namespace {

// scores[j] = scale * (q . k[j]) for j < keys; q [d], k [keys, d].
void row_scores(const float* q, const float* k, int64_t keys, int64_t d, float scale,
                float* scores) {
  for (int64_t j = 0; j < keys; ++j) {
    const float* kj = k + j * d;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t p = 0; p < d; ++p) s += q[p] * kj[p];
    scores[j] = scale * s;
  }
}

// out[c] = sum over j < keys of p[j] * v[j, c], keys in order; v [keys, dv].
void row_output(const float* p, const float* v, int64_t keys, int64_t dv, float* out) {
  std::fill(out, out + dv, 0.0f);
  for (int64_t j = 0; j < keys; ++j) {
    const float pj = p[j];
    const float* __restrict vj = v + j * dv;
    float* __restrict o = out;
#pragma omp simd
    for (int64_t c = 0; c < dv; ++c) o[c] += pj * vj[c];
  }
}

}  // namespace

void cpu_attention(const OpCall& call) {
  using namespace attention_rows;
  if (call.output.type.numel() == 0) return;
  Dims m = dims_of(call);
  if (m.d == 0) return reference::ref_attention(call);  // 0 * inf scores: keep the oracle's rule
  int64_t t_len = m.t_len, s_len = m.s_len, d = m.d, dv = m.dv;
  const ConstView &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2];
  const MutView& out = call.output;
  int mask_at = ops::attention_mask_operand(call.inputs.size(), 3, *call.attrs);
  std::vector<float> mask_values;
  Mask mask;
  if (mask_at >= 0) {
    const ConstView& mv = call.inputs[mask_at];
    if (mv.type.dtype != DType::boolean) mask_values = to_f32(mv);
    Shape scores = call.inputs[0].type.shape;
    scores.back() = s_len;
    mask = plan_mask(mv, mask_values.data(), scores, m.batch);
  }
  int64_t blocks = (t_len + kRows - 1) / kRows;
  int64_t flops_per_task = kRows * std::max<int64_t>(1, s_len) * (d + dv);
  parallel_for(
      m.batch * blocks, std::max<int64_t>(1, (1 << 17) / flops_per_task),
      [&](int64_t b0, int64_t e0) {
        std::vector<float> scores(kRows * std::max<int64_t>(1, s_len)), u(m.p > 0 ? s_len : 0);
        // bf16/f16 operands are converted per task, only the rows it reads.
        std::vector<float> qbuf, kbuf, vbuf, obuf;
        for (int64_t t = b0; t < e0; ++t) {
          int64_t b = t / blocks, i0 = (t % blocks) * kRows, rows = std::min(kRows, t_len - i0);
          int64_t keys = m.causal ? std::min(s_len, i0 + rows) : s_len, kb = b / m.group;
          float* ob = out_run(out, (b * t_len + i0) * dv, rows * dv, obuf);
          const float* vv = f32_run(v, kb * s_len * dv, keys * dv, vbuf);
          bool attended[kRows];
          if (keys > 0) {
            const float* qb = f32_run(q, (b * t_len + i0) * d, rows * d, qbuf);
            const float* kk = f32_run(k, kb * s_len * d, keys * d, kbuf);
            if (t_len == 1)
              row_scores(qb, kk, keys, d, m.scale, scores.data());
            else
              sgemm(false, true, rows, keys, d, m.scale, qb, d, kk, d, 0.0f, scores.data(), keys);
          }
          for (int64_t i = 0; i < rows; ++i) {
            int64_t moff = mask_at >= 0 ? mask.batch_offset[b] + (i0 + i) * mask.row_stride : 0;
            float* row = scores.data() + i * keys;
            attended[i] = keys > 0 && softmax_scores(row, keys, i0 + i, m.causal,
                                                     mask_at >= 0 ? &mask : nullptr, moff);
            if (attended[i] && m.p > 0)
              dropout_row(m, uint64_t(b * t_len + i0 + i) * uint64_t(s_len), row, keys, u.data());
          }
          if (keys > 0 && t_len == 1)
            row_output(scores.data(), vv, keys, dv, ob);
          else if (keys > 0)
            sgemm(false, false, rows, dv, keys, 1.0f, scores.data(), keys, vv, dv, 0.0f, ob, dv);
          for (int64_t i = 0; i < rows; ++i)
            if (!attended[i]) std::fill(ob + i * dv, ob + (i + 1) * dv, 0.0f);
          put_run(out, (b * t_len + i0) * dv, rows * dv, ob);
        }
      });
}

}  // namespace loom::backends::cpu
